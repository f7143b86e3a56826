package adapters

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Directory is what the tickets service learns from other services'
// events: which agents exist, who the members of a workspace are, and
// which agent held a conversation. It is kept in memory, replayed from the
// streams at start and followed live; it never reads another service's
// collections.
type Directory struct {
	// Directory holds the agents and members learnt.
	*memory.Directory
	log *slog.Logger
	// Conversations holds every conversation the platform stream told of.
	Conversations *ConversationIndex
	// Keys open sealed transcripts, to index their words and tools (nil:
	// sealed transcripts are not indexed).
	Keys convseal.Keys
}

// NewDirectory returns an empty directory.
func NewDirectory(log *slog.Logger) *Directory {
	return &Directory{Directory: memory.NewDirectory(), log: log, Conversations: NewConversationIndex()}
}

// Follow starts following the agents, identity and platform streams and
// returns once the directory holds everything stored so far.
func (d *Directory) Follow(ctx context.Context, js jetstream.JetStream) error {
	feeds := []struct {
		stream  string
		filters []string
		last    bool
		apply   func(eventstore.Record)
	}{
		{events.AgentsStream, []string{events.AgentsAll}, true, d.applyAgent},
		{events.IdentityStream, []string{events.IdentityAccountsAll, events.IdentityUsersAll}, true, d.applyAccount},
		{events.PlatformStream, ConversationFeed, false, d.applyPlatform},
	}
	for _, f := range feeds {
		// The streams belong to other services, which may start later.
		d.log.Info("following stream", "stream", f.stream)
		fl, err := eventstore.Follow(ctx, js, f.stream, f.filters, f.last, f.apply)
		if err != nil {
			return err
		}
		if err := fl.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (d *Directory) applyAgent(rec eventstore.Record) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		d.log.Error("agent event undecodable", "seq", rec.Seq, "err", err)
		return
	}
	a, ok := events.StateOf[*agentsv1.Agent](msg)
	if !ok {
		return
	}
	if a.DeletedAtUnix != nil {
		d.DeleteAgent(a.GetAgentId())
	} else {
		d.PutAgent(a.GetWorkspaceId(), a.GetAgentId())
	}
}

func (d *Directory) applyAccount(rec eventstore.Record) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		return
	}
	switch ev := msg.(type) {
	case *identityv1.ServiceAccountCreated:
		a := ev.GetAccount()
		d.PutMember(a.GetWorkspaceId(), app.Member{UserID: a.GetUserId(), Name: a.GetName(), Email: a.GetEmail(), IsServiceAccount: true})
	case *identityv1.UserAdded:
		u := ev.GetUser()
		d.PutMember(u.GetWorkspaceId(), app.Member{UserID: u.GetUserId(), Name: u.GetFirstName(), Email: u.GetEmail()})
	}
}

func (d *Directory) applyPlatform(rec eventstore.Record) {
	ev, ok := parseConversationEvent(rec)
	if !ok {
		d.log.Warn("platform event ignored: not a conversation event with well-formed ids", "subject", rec.Subject, "seq", rec.Seq)
		return
	}
	ev.openSealed(context.Background(), d.Keys)
	_ = d.Conversations.Record(context.Background(), rec.Seq, ev.summaryEvent())
}

// Conversation returns what is known of a conversation in a workspace.
func (d *Directory) Conversation(workspaceID, conversationID string) (app.Conversation, bool) {
	c, ok := d.Conversations.Summary(workspaceID, conversationID)
	if !ok {
		return app.Conversation{}, false
	}
	return app.Conversation{AgentID: c.AgentID, StartedAt: c.StartedAtMs / 1000, EndedAt: c.EndedAtMs / 1000}, true
}
