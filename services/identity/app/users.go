package app

import (
	"context"
	"errors"
	"net/mail"
	"strings"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// Member roles.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// MaxEmailLen bounds an e-mail address: RFC 5321 bounds a path to 254
// characters. The API schema (MemberAdd) says it too; the operator's
// create-workspace command adds its owner here without passing the edge.
const MaxEmailLen = 254

// AddUser makes a person a member of the workspace. The user id derives
// from the e-mail address, so one address is one member: adding it again
// is a 409, unless it is a replay of the command that added it (the same
// command id, an Idempotency-Key), answered with the member it added. The
// role and the first name are checked at the edge, against the schema
// (MemberAdd); the address is parsed here, which no schema can say.
func (a *App) AddUser(ctx context.Context, caller principal.Caller, email, firstName, role string) (*identityv1.User, error) {
	workspaceID, commandID := caller.WorkspaceID, caller.CommandID
	addr, err := mail.ParseAddress(strings.TrimSpace(email))
	if len(email) > MaxEmailLen || err != nil || addr.Name != "" {
		return nil, apperr.ValidationErrors{{Loc: []any{"body", "email"}, Msg: "Input should be a valid e-mail address of at most 254 characters", Type: "value_error"}}
	}
	if role == "" {
		role = RoleMember
	}
	normalized := strings.ToLower(addr.Address)
	now := a.Now()
	u := &identityv1.User{
		UserId: "user_" + esproto.StableID(workspaceID, normalized), WorkspaceId: workspaceID,
		Email: normalized, FirstName: strings.TrimSpace(firstName), Role: role, CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(),
	}
	subject, err := events.UserSubject(workspaceID, u.UserId)
	if err != nil {
		return nil, err
	}
	if err := a.checkMemberRoom(ctx, workspaceID, subject); err != nil {
		return nil, err
	}
	meta := esproto.Meta(ctx, workspaceID, commandID, a.Now())
	res, err := a.record(ctx, subject, 0, meta, &identityv1.UserAdded{Meta: meta, User: u})
	if errors.Is(err, eventlog.ErrConflict) {
		return nil, apperr.MemberExists
	}
	if err != nil {
		return nil, err
	}
	if res.Duplicate {
		return a.addedUser(ctx, res.Seq)
	}
	return u, nil
}

// checkMemberRoom refuses a new member in a workspace that has
// Limits.Members. A member already there (its subject has an event) goes
// on, to be answered as before (409 member_exists, or the replay of the
// keyed add that added it).
func (a *App) checkMemberRoom(ctx context.Context, workspaceID, subject string) error {
	return a.checkRoom(ctx, workspaceID, bound{Members, a.Limits.Members, "members", raiseIt}, func() (bool, error) {
		_, found, err := a.Store.Last(ctx, subject)
		return found, err
	})
}

// addedUser is the member a command's first attempt added at seq, put in
// the read model again: that attempt may have died before.
func (a *App) addedUser(ctx context.Context, seq uint64) (*identityv1.User, error) {
	msg, err := esproto.At(ctx, a.Store, seq)
	if err != nil {
		return nil, err
	}
	ev, ok := msg.(*identityv1.UserAdded)
	if !ok {
		return nil, apperr.MemberExists // the key's first use was not this
	}
	if err := a.ReadModel.Put(ctx, seq, UserDocOf(ev.GetUser())); err != nil {
		a.Log.WarnContext(ctx, "inline read-model write failed; the stream will catch it up", "user_id", ev.GetUser().GetUserId(), "err", err)
	}
	return ev.GetUser(), nil
}
