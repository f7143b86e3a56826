// Package app holds the ticket use cases. Commands read a ticket's state
// from its last (state-carrying) event, decide with the domain rules, and
// append with optimistic concurrency; the read model is written inline
// and caught up by the durable projector.
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// App is the tickets application.
type App struct {
	Store     *eventstore.Store
	ReadModel *adapters.ReadModel
	Directory *adapters.Directory
	Log       *slog.Logger
	Now       func() time.Time
}

const conflictAttempts = 5

var (
	errTicketNotFound = httpx.NotFound("ticket_not_found", "No triage ticket with that id exists in this workspace.")
	errAgentNotFound  = httpx.NotFound("agent_not_found", "No agent with that id exists in this workspace.")
)

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Get returns a live ticket of the workspace and its stream sequence.
func (a *App) Get(ctx context.Context, workspaceID, ticketID string) (*ticketsv1.Ticket, uint64, error) {
	subject, err := events.TicketSubject(workspaceID, ticketID)
	if err != nil {
		return nil, 0, errTicketNotFound
	}
	msg, seq, found, err := esproto.Last(ctx, a.Store, subject)
	if err != nil {
		return nil, 0, err
	}
	t := adapters.StateOf(msg)
	if !found || t == nil || t.DeletedAtUnixSecs != nil {
		return nil, 0, errTicketNotFound
	}
	return t, seq, nil
}

// record appends ev (carrying state) and projects it inline.
func (a *App) record(ctx context.Context, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message, state *ticketsv1.Ticket) (eventstore.Appended, error) {
	res, err := esproto.Append(ctx, a.Store, subject, expected, meta, ev)
	if err != nil {
		return res, err
	}
	if !res.Duplicate {
		if err := a.ReadModel.Apply(ctx, res.Seq, state); err != nil {
			a.Log.Warn("inline projection failed; the projector will catch up", "subject", subject, "err", err)
		}
	}
	return res, nil
}

// mutation decides the event for a loaded ticket; a nil event means no
// change.
type mutation func(next *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error)

// change loads a ticket, applies m, and appends the result, retrying
// against fresh state on a concurrent change. commandID, when set, makes
// a retried request idempotent.
func (a *App) change(ctx context.Context, workspaceID, ticketID, commandID string, m mutation) (*ticketsv1.Ticket, error) {
	var out *ticketsv1.Ticket
	err := eventstore.Retry(ctx, conflictAttempts, func() error {
		cur, seq, err := a.Get(ctx, workspaceID, ticketID)
		if err != nil {
			return err
		}
		next := proto.Clone(cur).(*ticketsv1.Ticket)
		meta := esproto.Meta(ctx, workspaceID, commandID, a.now())
		ev, err := m(next, meta)
		if err != nil || ev == nil {
			out = cur
			return err
		}
		next.UpdatedAtUnixSecs = a.now().Unix()
		subject, _ := events.TicketSubject(workspaceID, ticketID)
		res, err := a.record(ctx, subject, seq, meta, ev, next)
		if err != nil {
			return err
		}
		if res.Duplicate {
			out, _, err = a.Get(ctx, workspaceID, ticketID)
			return err
		}
		out = next
		return nil
	})
	if errors.Is(err, eventstore.ErrConflict) {
		return nil, httpx.Conflict("concurrent_update", "The ticket changed concurrently; retry.")
	}
	return out, err
}
