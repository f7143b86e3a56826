// Package app holds identity's use cases: one file per command or query.
// Commands load state from the event store, decide, append a
// state-carrying event with optimistic concurrency, and put its state in
// the read model inline so the caller reads its own writes.
package app

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// App is the identity application.
type App struct {
	Store     eventlog.Store
	ReadModel ReadModel
	Log       *slog.Logger
	Now       func() time.Time // the clock (required)
	// Limits bound what one workspace may have.
	Limits Limits
}

// Limits bound a workspace's identities (0: no bound). Every gateway
// holds every live key in memory, and a workspace's listings of accounts,
// keys and members are each one answer: without bounds, one workspace
// could grow them as it liked. The counts are the read model's, not taken
// under a lock: creates racing each other may go over a bound by what
// they add.
type Limits struct {
	Keys     int // live (unrevoked) API keys, whatever account holds them
	Accounts int // service accounts (none can be deleted)
	Members  int // members (none can be removed)
}

// raiseIt is the remedy for a bound on what cannot be deleted.
const raiseIt = "the platform's operator can raise the bound"

// bound is a Limits bound as checkRoom applies it: the listing it counts,
// its value, and how the error names it and says to make room.
type bound struct {
	listing      Listing
	limit        int
	what, remedy string
}

// checkRoom refuses one more of what b bounds in a workspace that has
// b.limit of them, unless made says the one asked for already exists (a
// keyed retry of a create that made it, or a member added before), which
// goes on to be answered as before.
func (a *App) checkRoom(ctx context.Context, workspaceID string, b bound, made func() (bool, error)) error {
	if b.limit <= 0 {
		return nil
	}
	n, err := a.ReadModel.Count(ctx, workspaceID, b.listing)
	if err != nil || n < b.limit {
		return err
	}
	if ok, err := made(); ok || err != nil {
		return err
	}
	return apperr.WorkspaceLimitReached(b.what, b.limit, b.remedy)
}

// New wires the application over the IDENTITY log and the read model.
func New(store eventlog.Store, rm ReadModel, log *slog.Logger, now func() time.Time) *App {
	return &App{Store: store, ReadModel: rm, Log: log, Now: now}
}

// record appends ev and puts its state in the read model as of the
// append's sequence (the stream feeds the read model too, which covers a
// crash between the two). A duplicate is not put: ev is this attempt's
// state, not the one stored.
func (a *App) record(ctx context.Context, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message) (eventlog.Appended, error) {
	res, err := esproto.Append(ctx, a.Store, subject, expected, meta, ev)
	if err != nil {
		return res, err
	}
	if doc := DocOf(ev); doc != nil && !res.Duplicate {
		if err := a.ReadModel.Put(ctx, res.Seq, doc); err != nil {
			a.Log.WarnContext(ctx, "inline read-model write failed; the stream will catch it up", "subject", subject, "err", err)
		}
	}
	return res, nil
}

// loadAccount returns a workspace's service account, or a 404.
func (a *App) loadAccount(ctx context.Context, workspaceID, userID string) (*identityv1.ServiceAccount, error) {
	accounts := aggregate.Repo[*identityv1.ServiceAccount]{Env: a.env(), Subject: events.ServiceAccountSubject, NotFound: apperr.ServiceAccountNotFound}
	acct, _, err := accounts.Get(ctx, workspaceID, userID)
	return acct, err
}

func (a *App) env() aggregate.Env { return aggregate.Env{Store: a.Store, Log: a.Log, Now: a.Now} }

// keys is the repository of API keys, whose every change is a command on
// one key's subject: a revoked key reads as gone.
func (a *App) keys() *aggregate.Repo[*identityv1.ApiKey] {
	return &aggregate.Repo[*identityv1.ApiKey]{
		Env:     a.env(),
		Subject: events.APIKeySubject,
		Gone:    func(k *identityv1.ApiKey) bool { return k.RevokedAtUnix != nil },
		Touch:   func(k *identityv1.ApiKey, t time.Time) { k.UpdatedAtUnix = t.Unix() },
		Project: func(ctx context.Context, seq uint64, k *identityv1.ApiKey) error {
			return a.ReadModel.Put(ctx, seq, KeyDocOf(k))
		},
		NotFound: apperr.APIKeyNotFound,
	}
}

// loadKey returns a key's state and stream sequence, or a 404. Revoked
// keys are gone for every purpose but audit.
func (a *App) loadKey(ctx context.Context, workspaceID, accountID, keyID string) (*identityv1.ApiKey, uint64, error) {
	k, seq, err := a.keys().Get(ctx, workspaceID, keyID)
	if err != nil {
		return nil, 0, err
	}
	if k.GetServiceAccountUserId() != accountID {
		return nil, 0, apperr.APIKeyNotFound
	}
	return k, seq, nil
}
