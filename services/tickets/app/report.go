package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// conversationOf names an agent's conversation in a workspace.
type conversationOf struct{ workspaceID, agentID, conversationID string }

// ticketID is the id of the gen-th ticket a report on the conversation
// opens: fixed by the conversation, so that reports at once meet on one
// subject.
func (c conversationOf) ticketID(gen int) string {
	return "tkt_" + esproto.StableID(c.workspaceID, fmt.Sprintf("conversation/%s/%s/%d", c.agentID, c.conversationID, gen))
}

// errNoLongerActive is a join's refusal of a ticket that stopped
// collecting reports since it was looked up: the report looks again.
var errNoLongerActive = errors.New("the ticket no longer collects reports")

// report files a report on a conversation: it joins the conversation's
// active ticket (join, answering true) or opens one (open makes it at the
// id given). A conversation's tickets have ids fixed by (agent,
// conversation, generation), so two reports at once cannot open two: the
// second's create finds the subject taken, and it joins the ticket the
// first opened. A generation that no longer collects reports (resolved,
// closed, deleted, or merged into a ticket that does not) makes way for
// the next; one merged into an active ticket passes the report on to it.
// Before opening a generation, a ticket raised before ids were fixed is
// looked for in the read model.
//
// A keyed report sent again answers as its first attempt did: the ticket
// it opened (false) or, as that attempt left it, the one it joined.
func (a *App) report(ctx context.Context, c conversationOf, commandID string, join func(id string) (*ticketsv1.Ticket, error), open func(id string) *ticketsv1.Ticket) (*ticketsv1.Ticket, bool, error) {
	for gen := 0; gen < maxGenerations; gen++ {
		t, joined, next, err := a.reportOn(ctx, c, c.ticketID(gen), commandID, join, open)
		if !next {
			return t, joined, err
		}
	}
	return nil, false, fmt.Errorf("conversation %s of agent %s: %d generations of its ticket closed or deleted", c.conversationID, c.agentID, maxGenerations)
}

// reportOn files the report on generation id of the conversation's
// tickets; next says that generation no longer collects reports.
func (a *App) reportOn(ctx context.Context, c conversationOf, id, commandID string, join func(id string) (*ticketsv1.Ticket, error), open func(id string) *ticketsv1.Ticket) (t *ticketsv1.Ticket, joined, next bool, err error) {
	ws := c.workspaceID
	for range 3 { // again when a concurrent report opened it, or it closed, first
		if t, joined, ok, err := a.reported(ctx, ws, id, commandID); err != nil || ok {
			return t, joined, false, err
		}
		target, err := a.activeFrom(ctx, ws, id)
		switch {
		case err == nil && target == "":
			return nil, false, true, nil
		case err == nil:
			t, err := join(target)
			if errors.Is(err, errNoLongerActive) {
				continue
			}
			return t, true, false, err
		case !errors.Is(err, a.Tickets.NotFound):
			return nil, false, false, err
		}
		if legacy, _ := a.ReadModel.ActiveTicket(ctx, ws, c.agentID, c.conversationID); legacy != "" && legacy != id {
			if t, err := join(legacy); !errors.Is(err, errNoLongerActive) {
				return t, true, false, err
			}
		}
		t, duplicate, err := a.createAt(ctx, open(id), commandID)
		switch {
		case errors.Is(err, a.Tickets.NotFound):
			return nil, false, true, nil // the subject holds a deleted ticket (so a keyed create finds it)
		case errors.Is(err, eventlog.ErrConflict):
			if _, _, gerr := a.Get(ctx, ws, id); errors.Is(gerr, a.Tickets.NotFound) {
				return nil, false, true, nil // the subject holds a deleted ticket
			}
			continue // another report opened it first: join it
		case err != nil:
			return nil, false, false, err
		case duplicate:
			continue // the command's own, or another's opened first: told apart above
		}
		return t, false, false, nil
	}
	return nil, false, false, apperr.ConcurrentUpdate
}

// reported is what a keyed report's first attempt did on ticket id, or on
// the tickets id was merged into (a report reaching id joins those), if
// it did anything there: the ticket it opened (joined false), or the one
// it joined as that attempt left it.
func (a *App) reported(ctx context.Context, ws, id, commandID string) (t *ticketsv1.Ticket, joined, ok bool, err error) {
	if commandID == "" {
		return nil, false, false, nil
	}
	for hops := 0; hops < maxMergeHops; hops++ {
		ev, first, found, err := a.Tickets.Recorded(ctx, ws, id, commandID)
		if err != nil || found {
			_, opened := ev.(*ticketsv1.TicketCreated)
			return first, !opened, found, err
		}
		t, _, err := a.Get(ctx, ws, id)
		if err != nil || t.Status != domain.StatusMerged || t.GetMergedIntoTicketId() == "" {
			return nil, false, false, ignoreNotFound(err, a.Tickets.NotFound)
		}
		id = t.GetMergedIntoTicketId()
	}
	return nil, false, false, nil
}

// ignoreNotFound is err, or nil when it is notFound.
func ignoreNotFound(err, notFound error) error {
	if errors.Is(err, notFound) {
		return nil
	}
	return err
}

// maxMergeHops bounds the merges a report follows from a conversation's
// ticket to the one it joins.
const maxMergeHops = 5

// activeFrom is the active ticket a report reaching ticket id joins: id
// itself, or the ticket it was merged into; "" when that one collects no
// reports. NotFound when id is no ticket (or a deleted one).
func (a *App) activeFrom(ctx context.Context, ws, id string) (string, error) {
	for hops := 0; hops < maxMergeHops; hops++ {
		t, _, err := a.Get(ctx, ws, id)
		if err != nil {
			if hops > 0 && errors.Is(err, a.Tickets.NotFound) {
				return "", nil // merged into a ticket deleted since
			}
			return "", err
		}
		if t.Status != domain.StatusMerged || t.GetMergedIntoTicketId() == "" {
			if domain.IsActive(t.Status) {
				return id, nil
			}
			return "", nil
		}
		id = t.GetMergedIntoTicketId()
	}
	return "", nil
}
