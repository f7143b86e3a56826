// Package app holds the ticket use cases. Commands go through the
// aggregate repository (state from the ticket's last event, optimistic
// concurrency, inline projection) and the domain rules; listings read the
// ReadModel port (Mongo, or the memory index).
package app

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// App is the tickets application.
type App struct {
	Tickets   *aggregate.Repo[*ticketsv1.Ticket]
	ReadModel ReadModel
	Directory Directory
	// Conversations and Transcripts serve the conversations API; a QA
	// worker's application has neither.
	Conversations Conversations
	Transcripts   Transcripts
	// Reported, when set, holds the analyses call stacks reported at
	// conversations' ends, as they came.
	Reported ReportedAnalyses
	// Deletion deletes conversations for good (delete.go).
	Deletion ConversationDeletion
	// Verdicts, when set, holds the judge's analyses of conversations and
	// reviewers' labels (see verdicts.go).
	Verdicts Verdicts
	// ConvWriter is where the annotations written here are projected at
	// once (the conversations read model); Tags, the tags' index.
	ConvWriter ConversationWriter
	Tags       Tags
	// TagRepo and Annotations are the conversation tags and the feedback
	// and tags on a conversation, aggregates on stream TICKETS beside the
	// tickets.
	TagRepo     *aggregate.Repo[*ticketsv1.ConversationTag]
	Annotations *aggregate.Repo[*ticketsv1.ConversationAnnotations]
	// Advisor, when set, clusters through a model instead of the offline
	// rules (exact duplicates excepted).
	Advisor ClusterAdvisor
	// Agents and Identity, when set, are the AGENTS and IDENTITY streams:
	// an agent or a member the directory has not yet seen (one created a
	// moment ago) is looked up there before a write naming it is refused.
	Agents   eventlog.Store
	Identity eventlog.Store
	// Cursors signs the listings' cursors.
	Cursors *cursor.Codec
	Now     func() time.Time

	// lastOpenedMs is the creation time openedAt last handed out, shared
	// by the copies of the App that New made.
	lastOpenedMs *atomic.Int64
}

// openedAt is the creation time of a ticket opened now: the clock's,
// moved on a millisecond where this process handed its millisecond out
// already. Listings order tickets by creation time, then id, and ids are
// not in creation order (a conversation's tickets have ids fixed by it, a
// keyed create's by its key): tickets opened one after the other within a
// millisecond would otherwise list out of order.
func (a *App) openedAt() time.Time {
	now := a.Now()
	if a.lastOpenedMs == nil {
		return now
	}
	for {
		last := a.lastOpenedMs.Load()
		ms := max(now.UnixMilli(), last+1)
		if a.lastOpenedMs.CompareAndSwap(last, ms) {
			return time.UnixMilli(ms)
		}
	}
}

// RequireAgent answers apperr.AgentNotFound unless a live agent belongs
// to the workspace: the directory knows it or, on a miss only, the AGENTS
// stream has it, so an agent is usable as soon as its create was answered.
func (a *App) RequireAgent(ctx context.Context, workspaceID, agentID string) error {
	if a.Directory.AgentExists(workspaceID, agentID) {
		return nil
	}
	if a.Agents == nil {
		return apperr.AgentNotFound
	}
	_, _, err := aggregate.AgentReader(a.Agents).Get(ctx, workspaceID, agentID)
	return err
}

// isMember reports whether userID is a person or a service account of
// the workspace, and whether its account is locked there, as the IDENTITY
// stream has it (the directory without it): the directory follows the
// stream a moment behind, so a member locked or unlocked just before an
// assignment would be judged on its state before.
func (a *App) isMember(ctx context.Context, workspaceID, userID string) (member, locked bool, err error) {
	if a.Identity == nil {
		m, ok := a.Directory.Member(workspaceID, userID)
		return ok, m.Locked, nil
	}
	for _, subjectOf := range []func(string, string) (string, error){events.UserSubject, events.ServiceAccountSubject} {
		subject, err := subjectOf(workspaceID, userID)
		if err != nil {
			return false, false, nil // not an id: no such member
		}
		rec, found, err := a.Identity.Last(ctx, subject)
		if err != nil {
			return false, false, err
		}
		if !found {
			continue
		}
		msg, err := esproto.Decode(rec)
		if err != nil {
			return false, false, err
		}
		u, _ := events.StateOf[*identityv1.User](msg)
		return true, u.GetLocked(), nil
	}
	return false, false, nil
}

// New wires the application over the TICKETS stream, the read model and
// the directory.
func New(store eventlog.Store, rm ReadModel, dir Directory, log *slog.Logger, now func() time.Time) *App {
	a := &App{ReadModel: rm, Directory: dir, Now: now, lastOpenedMs: new(atomic.Int64)}
	env := aggregate.Env{Store: store, Log: log, Now: now} // the three repos share the TICKETS stream
	a.Tickets = &aggregate.Repo[*ticketsv1.Ticket]{
		Env:     env,
		Subject: events.TicketSubject,
		Gone:    func(s *ticketsv1.Ticket) bool { return s.DeletedAtUnixSecs != nil },
		Touch:   func(s *ticketsv1.Ticket, t time.Time) { s.UpdatedAtUnixSecs = t.Unix() },
		Project: rm.Put, NotFound: apperr.TicketNotFound,
	}
	a.TagRepo = &aggregate.Repo[*ticketsv1.ConversationTag]{
		Env:     env,
		Subject: events.TicketSubject,
		Gone:    func(s *ticketsv1.ConversationTag) bool { return s.DeletedAtUnixSecs != nil },
		Touch:   func(s *ticketsv1.ConversationTag, t time.Time) { s.UpdatedAtUnixSecs = t.Unix() },
		Project: func(ctx context.Context, seq uint64, t *ticketsv1.ConversationTag) error {
			if a.Tags == nil {
				return nil
			}
			return a.Tags.Put(ctx, seq, t)
		},
		NotFound: apperr.ConversationTagNotFound,
	}
	a.Annotations = &aggregate.Repo[*ticketsv1.ConversationAnnotations]{
		Env:     env,
		Subject: events.ConversationAnnotationsSubject,
		Touch:   func(s *ticketsv1.ConversationAnnotations, t time.Time) { s.UpdatedAtUnixSecs = t.Unix() },
		Project: func(ctx context.Context, seq uint64, an *ticketsv1.ConversationAnnotations) error {
			if a.ConvWriter == nil {
				return nil
			}
			return a.ConvWriter.Annotate(ctx, seq, an)
		},
		NotFound: apperr.ConversationUnknown,
	}
	return a
}

// Get returns a live ticket of the workspace and its stream sequence.
func (a *App) Get(ctx context.Context, workspaceID, ticketID string) (*ticketsv1.Ticket, uint64, error) {
	return a.Tickets.Get(ctx, workspaceID, ticketID)
}

// change applies m to a ticket through the repository.
func (a *App) change(ctx context.Context, workspaceID, ticketID, commandID string, m aggregate.Mutation[*ticketsv1.Ticket]) (*ticketsv1.Ticket, error) {
	return a.Tickets.Update(ctx, workspaceID, ticketID, commandID, m)
}
