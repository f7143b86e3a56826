package adapters

import (
	"context"
	"errors"
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

	js       jetstream.JetStream
	platform *platformFeed // set by Follow
}

// NewDirectory returns an empty directory.
func NewDirectory(log *slog.Logger) *Directory {
	return &Directory{Directory: memory.NewDirectory(), log: log, Conversations: NewConversationIndex()}
}

// Follow starts following the agents, identity and platform streams and
// returns once the directory holds everything stored so far.
func (d *Directory) Follow(ctx context.Context, js jetstream.JetStream) error {
	platform := newPlatformFeed(ctx, d, nil)
	d.js, d.platform = js, platform
	// A stream made anew (a restore) is read again from its start: what
	// was learnt from the old one goes first (an agent deleted there may
	// live in the new one, and its tickets would stay hidden).
	madeAnew := func(fl *eventstore.Follower, err error, stream string, forget func()) (*eventstore.Follower, error) {
		if err == nil {
			fl.WhenMadeAnew(func() {
				d.log.Warn("stream made anew: the directory forgets what it learnt of it and reads it again", "stream", stream)
				forget()
			})
		}
		return fl, err
	}
	feeds := []struct {
		stream string
		follow func() (*eventstore.Follower, error)
	}{
		{events.AgentsStream, func() (*eventstore.Follower, error) {
			fl, err := eventstore.Follow(ctx, js, events.AgentsStream, []string{events.AgentsAll}, true, d.applyAgent)
			return madeAnew(fl, err, events.AgentsStream, d.Directory.ForgetAgents)
		}},
		{events.IdentityStream, func() (*eventstore.Follower, error) {
			fl, err := eventstore.Follow(ctx, js, events.IdentityStream, []string{events.IdentityAccountsAll, events.IdentityUsersAll}, true, d.applyAccount)
			return madeAnew(fl, err, events.IdentityStream, d.Directory.ForgetMembers)
		}},
		{events.PlatformStream, func() (*eventstore.Follower, error) {
			after, err := d.platformStart(ctx, js)
			if err != nil {
				return nil, err
			}
			platform.appliedSeq.Advance(after) // what the snapshot holds
			return eventstore.FollowAfter(ctx, js, events.PlatformStream, ConversationFeed, after, func(rec eventstore.Record) {
				platform.add(ctx, rec)
			})
		}},
	}
	for _, f := range feeds {
		// The streams belong to other services, which may start later.
		d.log.Info("following stream", "stream", f.stream)
		fl, err := f.follow()
		if err != nil {
			return err
		}
		if err := fl.Wait(ctx); err != nil {
			return err
		}
	}
	// Every platform record stored is handed over: wait until applied.
	return platform.drain(ctx)
}

// platformStart is the PLATFORM record the conversations' index has
// applied up to: its snapshot's, or 0 for a replay from the first. A
// snapshot taken past the stream's last record is of another stream (it
// was deleted and made again): the index is emptied and replayed.
func (d *Directory) platformStart(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	seq := d.Conversations.State().PlatformSeq
	if seq == 0 {
		return 0, nil
	}
	str, err := eventstore.WaitForStream(ctx, js, events.PlatformStream)
	if err != nil {
		return 0, err
	}
	if last := str.CachedInfo().State.LastSeq; last < seq {
		d.log.Warn("conversation index snapshot is ahead of the platform stream; replaying it whole", "snapshot_seq", seq, "stream_last_seq", last)
		d.Conversations.Reset()
		return 0, nil
	}
	return seq, nil
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
	case *identityv1.UserAdded, *identityv1.UserUpdated:
		u, _ := events.StateOf[*identityv1.User](ev)
		d.PutMember(u.GetWorkspaceId(), app.Member{UserID: u.GetUserId(), Name: u.GetFirstName(), Email: u.GetEmail(), Locked: u.GetLocked()})
	}
}

// AwaitConversations implements app.Directory: it reads where the
// workspace's conversation events end on PLATFORM (a direct get of each
// event's last, at most two), then waits until the directory has applied
// up to there. Called on a miss only.
func (d *Directory) AwaitConversations(ctx context.Context, workspaceID string) error {
	if d.platform == nil {
		return nil // not following: nothing to wait for
	}
	var last uint64
	for _, event := range conversationEvents {
		subject, err := events.PlatformSubject(workspaceID, event)
		if err != nil {
			return nil // not a workspace id: it holds no conversation
		}
		m, err := eventstore.GetMsg(ctx, d.js, events.PlatformStream, eventstore.MsgRequest{LastFor: subject})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return eventstore.Classify(err)
		}
		last = max(last, m.Sequence)
	}
	return d.platform.appliedSeq.Wait(ctx, last)
}

// conversationEvents are the platform events that tell of a conversation.
var conversationEvents = []string{"conversation_started", "conversation_ended"}

// Conversation returns what is known of a conversation in a workspace.
func (d *Directory) Conversation(workspaceID, conversationID string) (app.Conversation, bool) {
	c, ok := d.Conversations.Summary(workspaceID, conversationID)
	if !ok {
		return app.Conversation{}, false
	}
	return app.Conversation{AgentID: c.AgentID, StartedAt: c.StartedAtMs / 1000, EndedAt: c.EndedAtMs / 1000}, true
}
