package app

import (
	"context"
	"slices"
	"strings"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// ReadModel is what listings read: live tickets in a workspace's orders,
// filtered and paged by keyset. Implementations (an in-memory ordered
// index, MongoDB) pass one conformance suite (readmodeltest): same
// results, same order, same cursors. A page costs the page, not the
// workspace: filters are evaluated where the tickets are, walking an
// index in the listing's order from the cursor.
type ReadModel interface {
	// Put records t as of stream sequence seq; an older or equal seq is
	// ignored, so redelivery and reordering converge. A deleted ticket
	// leaves every listing.
	Put(ctx context.Context, seq uint64, t *ticketsv1.Ticket) error
	// Page returns up to q.Limit live tickets of q.WorkspaceID matching
	// q.Filter and q.Keep, strictly after q.After in q's order, and
	// whether more follow. The tickets may be the read model's own:
	// callers read them, never change them.
	Page(ctx context.Context, q Query) (tickets []*ticketsv1.Ticket, more bool, err error)
	// ActiveTicket is the id of the active (open or in progress) ticket of
	// an agent raised on a conversation, or "".
	ActiveTicket(ctx context.Context, workspaceID, agentID, conversationID string) (string, error)
}

// Query is one page of a listing.
type Query struct {
	WorkspaceID string
	Filter      Filter
	ByPriority  bool      // most urgent first, then newest; else newest first
	After       *Position // the last ticket of the previous page
	Limit       int
	// KeepAgent is a residual test of a ticket's agent (the caller's view
	// of which agents exist), which a read model that knows each ticket's
	// agent applies before reading the ticket: a deleted agent's tickets
	// may be most of a workspace's; nil keeps all.
	KeepAgent func(agentID string) bool
	// Keep is a residual test the read model applies after Filter; nil
	// keeps all.
	Keep func(*ticketsv1.Ticket) bool
}

// Residual is what of q a store that filters by fields tests on each
// ticket it reads: the search, KeepAgent and Keep.
func (q Query) Residual(t *ticketsv1.Ticket) bool {
	return (q.Filter.Search == "" || SearchIn(t, q.Filter.Search) != nil) &&
		(q.KeepAgent == nil || q.KeepAgent(t.AgentId)) && (q.Keep == nil || q.Keep(t))
}

// Filter is what a listing's query parameters select; empty fields select
// everything.
type Filter struct {
	AgentID, Status, Assignee, ConversationID, OwnerUserID, IssueType, Label, MergedInto string
	Sources, Priorities                                                                  []string
	// Search keeps the tickets whose text holds it (SearchIn).
	Search string
}

// Matches is the meaning of every filter; each read model implements
// exactly this.
func (f Filter) Matches(t *ticketsv1.Ticket) bool {
	switch {
	case f.AgentID != "" && t.AgentId != f.AgentID,
		f.Status != "" && t.Status != f.Status,
		f.Assignee == "unassigned" && t.AssigneeUserId != nil,
		f.Assignee != "" && f.Assignee != "unassigned" && t.GetAssigneeUserId() != f.Assignee,
		f.ConversationID != "" && !slices.Contains(t.ConversationIds, f.ConversationID),
		len(f.Sources) > 0 && !slices.Contains(f.Sources, t.Source),
		len(f.Priorities) > 0 && !slices.Contains(f.Priorities, t.Priority),
		f.OwnerUserID == "agent" && t.Source != domain.SourceAgent,
		f.OwnerUserID != "" && f.OwnerUserID != "agent" && t.OwnerUserId != f.OwnerUserID,
		f.IssueType != "" && t.IssueType != f.IssueType,
		f.Label != "" && !slices.Contains(t.Labels, f.Label),
		f.MergedInto != "" && t.GetMergedIntoTicketId() != f.MergedInto,
		f.Search != "" && SearchIn(t, f.Search) == nil:
		return false
	}
	return true
}

// Position is where a ticket stands in a listing's order; it is what a
// cursor carries. Listings run in descending position: rank (priority
// order only), then creation time, then id, all fixed at creation except
// the rank, so paging while tickets are created never repeats or skips.
type Position struct {
	Rank    int    `json:"r,omitempty"`
	Created int64  `json:"c"`
	ID      string `json:"i"`
}

// PositionOf is t's position in an order.
func PositionOf(t *ticketsv1.Ticket, byPriority bool) Position {
	p := Position{Created: t.CreatedAtUnixMs, ID: t.TicketId}
	if byPriority {
		p.Rank = domain.PriorityRank(t.Priority)
	}
	return p
}

// Compare orders positions ascending: rank, then creation, then id.
func (p Position) Compare(o Position) int {
	switch {
	case p.Rank != o.Rank:
		return p.Rank - o.Rank
	case p.Created != o.Created:
		if p.Created < o.Created {
			return -1
		}
		return 1
	default:
		return strings.Compare(p.ID, o.ID)
	}
}
