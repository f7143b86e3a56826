package app

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// CommentInput is a comment on the ticket.
type CommentInput struct {
	Comment string `json:"comment"`
}

// TurnCommentInput is one turn comment of a request.
type TurnCommentInput struct {
	TurnIndex *int   `json:"turn_index"`
	Comment   string `json:"comment"`
}

// CreateInput is the public create (by conversation) plus our documented
// extensions: agent_id for a conversation not yet seen, source, issue_type,
// labels, and the conversation's times.
type CreateInput struct {
	ConversationID    *string            `json:"conversation_id"`
	Title             *string            `json:"title"`
	QAComment         *string            `json:"qa_comment"`
	TurnComments      []TurnCommentInput `json:"turn_comments"`
	Priority          *string            `json:"priority"`
	AgentID           *string            `json:"agent_id"`
	Source            *string            `json:"source"`
	IssueType         *string            `json:"issue_type"`
	Labels            []string           `json:"labels"`
	FirstSeenUnixSecs *int64             `json:"first_seen_unix_secs"`
	LastSeenUnixSecs  *int64             `json:"last_seen_unix_secs"`
}

// ManualInput is a manual ticket on an agent.
type ManualInput struct {
	Title     *string  `json:"title"`
	QAComment *string  `json:"qa_comment"`
	Priority  *string  `json:"priority"`
	IssueType *string  `json:"issue_type"`
	Labels    []string `json:"labels"`
}

// Create raises a ticket on a conversation. When the conversation already
// has an active ticket, the report is added to that one (its comments,
// turn comments and priority), as the public API does; existing tells the
// caller which happened.
func (a *App) Create(ctx context.Context, caller principal.Caller, in CreateInput) (t *ticketsv1.Ticket, existing bool, err error) {
	commandID := caller.CommandID
	if t, ok, err := a.createdBy(ctx, caller.WorkspaceID, commandID); err != nil || ok {
		return t, false, err
	}
	// The body's shape (ids, lengths, enums, ranges) is checked at the
	// edge against the operation's schema; the QA worker's reports are
	// made from events checked when they were ingested.
	if in.ConversationID == nil {
		return nil, false, apperr.ValidationErrors{{Loc: []any{"body", "conversation_id"}, Msg: "Field required", Type: "missing"}}
	}
	conv := *in.ConversationID
	source := domain.SourceQA
	if in.Source != nil {
		source = *in.Source
	}
	turns := turnsOf(in.TurnComments)
	if in.QAComment != nil && domain.Blank(*in.QAComment) {
		in.QAComment = nil // no comment, as a joining report already took it
	}
	if in.QAComment == nil && len(in.TurnComments) == 0 {
		return nil, false, apperr.ValidationErrors{{Loc: []any{"body", "qa_comment"}, Msg: "Give qa_comment or turn_comments", Type: "missing"}}
	}

	ws := caller.WorkspaceID
	info, known := a.Directory.Conversation(ws, conv)
	if !known && (in.AgentID == nil || *in.AgentID == "") {
		// Without an agent, a conversation not learnt yet is a 404: it
		// may have been ingested a moment ago.
		if info, known, err = a.awaitConversation(ctx, ws, conv); err != nil {
			return nil, false, err
		}
	}
	agentID := info.AgentID
	if in.AgentID != nil && *in.AgentID != "" {
		if known && agentID != "" && agentID != *in.AgentID {
			return nil, false, apperr.ValidationErrors{{Loc: []any{"body", "agent_id"}, Msg: "The conversation belongs to agent " + agentID, Type: "value_error"}}
		}
		agentID = *in.AgentID
	}
	if agentID == "" {
		return nil, false, apperr.ConversationNotFound
	}
	if err := a.RequireAgent(ctx, ws, agentID); err != nil {
		return nil, false, err
	}
	now := a.openedAt()
	author := &caller.UserID
	comments := func(t *ticketsv1.Ticket) {
		for _, tc := range turns {
			t.TurnComments = append(t.TurnComments, &ticketsv1.TurnComment{TurnIndex: tc.TurnIndex, Comment: tc.Comment, CreatedAtUnixSecs: now.Unix(), OwnerUserId: author})
		}
	}

	join := func(id string) (*ticketsv1.Ticket, error) {
		return a.change(ctx, ws, id, commandID, func(next *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
			if !domain.IsActive(next.Status) { // resolved, closed or merged since it was looked up
				return nil, errNoLongerActive
			}
			if in.QAComment != nil {
				next.TicketComments = append(next.TicketComments, &ticketsv1.Comment{Comment: *in.QAComment, CreatedAtUnixSecs: now.Unix(), OwnerUserId: author})
			}
			comments(next)
			// The fields the report changed besides its comments, which
			// subscribers are told (changed_fields), as an update's.
			var changed []string
			if in.Priority != nil && domain.PriorityRank(*in.Priority) > domain.PriorityRank(next.Priority) {
				setPriority(next, *in.Priority, caller.UserID, now.Unix())
				changed = append(changed, "priority")
			}
			firstSeen, lastSeen := next.GetFirstSeenUnixSecs(), next.GetLastSeenUnixSecs()
			widenSeen(next, in.FirstSeenUnixSecs, in.LastSeenUnixSecs)
			if next.GetFirstSeenUnixSecs() != firstSeen {
				changed = append(changed, "first_seen_unix_secs")
			}
			if next.GetLastSeenUnixSecs() != lastSeen {
				changed = append(changed, "last_seen_unix_secs")
			}
			return &ticketsv1.TicketCommented{Meta: meta, Ticket: next, ChangedFields: changed}, nil
		})
	}
	open := func(id string) *ticketsv1.Ticket {
		t := &ticketsv1.Ticket{
			TicketId: id, WorkspaceId: ws, AgentId: agentID, OwnerUserId: caller.UserID,
			Status: domain.StatusOpen, Source: source, ConversationIds: []string{conv}, NeedsClustering: source != domain.SourceManual,
			QaComment: in.QAComment, Labels: in.Labels, CreatedAtUnixSecs: now.Unix(), UpdatedAtUnixSecs: now.Unix(), CreatedAtUnixMs: now.UnixMilli(),
		}
		if known {
			if info.StartedAt > 0 {
				t.FirstSeenUnixSecs = &info.StartedAt
			}
			if last := max(info.EndedAt, info.StartedAt); last > 0 {
				t.LastSeenUnixSecs = &last
			}
		}
		widenSeen(t, in.FirstSeenUnixSecs, in.LastSeenUnixSecs)
		comments(t)
		fill(t, in.Title, in.QAComment, in.IssueType, in.Priority, caller.UserID, now.Unix())
		return t
	}
	return a.report(ctx, conversationOf{ws, agentID, conv}, commandID, join, open)
}

// awaitConversations bounds how long a create waits on a miss for the
// directory to learn its workspace's conversations: past it, one not yet
// learnt is not found, as one never ingested is.
const awaitConversations = 5 * time.Second

// awaitConversation waits for the directory to hold every conversation
// event of the workspace stored so far, then looks the conversation up
// again: one ingested a moment ago (answered 202, then learnt from
// PLATFORM) is found, as an agent created a moment ago is (RequireAgent).
func (a *App) awaitConversation(ctx context.Context, ws, conv string) (Conversation, bool, error) {
	wctx, cancel := context.WithTimeout(ctx, awaitConversations)
	defer cancel()
	if err := a.Directory.AwaitConversations(wctx, ws); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return Conversation{}, false, nil // still behind: not found, as before
		}
		return Conversation{}, false, err
	}
	info, known := a.Directory.Conversation(ws, conv)
	return info, known, nil
}

// CreateManual raises a manual ticket on an agent.
func (a *App) CreateManual(ctx context.Context, caller principal.Caller, agentID string, in ManualInput) (*ticketsv1.Ticket, error) {
	commandID := caller.CommandID
	if err := a.RequireAgent(ctx, caller.WorkspaceID, agentID); err != nil {
		// A retry answers what its first attempt made, its agent deleted
		// since or not.
		if t, ok, rerr := a.createdBy(ctx, caller.WorkspaceID, commandID); rerr != nil || ok {
			return t, rerr
		}
		return nil, err
	}
	now := a.openedAt()
	t := &ticketsv1.Ticket{
		TicketId: ids.New("tkt"), WorkspaceId: caller.WorkspaceID, AgentId: agentID, OwnerUserId: caller.UserID,
		Status: domain.StatusOpen, Source: domain.SourceManual, ConversationIds: []string{}, QaComment: in.QAComment,
		Labels: in.Labels, CreatedAtUnixSecs: now.Unix(), UpdatedAtUnixSecs: now.Unix(), CreatedAtUnixMs: now.UnixMilli(),
	}
	fill(t, in.Title, in.QAComment, in.IssueType, in.Priority, caller.UserID, now.Unix())
	// A first attempt, which nearly every keyed create is, reads nothing
	// before it appends; the append tells a retry (duplicate), answered
	// as its ticket now is, as createdBy answers one whose agent went.
	t, duplicate, err := a.create(ctx, t, commandID)
	if duplicate {
		if current, ok, err := a.createdBy(ctx, caller.WorkspaceID, commandID); err != nil || ok {
			return current, err
		}
	}
	return t, err
}

// create appends TicketCreated; with a command id, a retry answers the
// ticket the first attempt created.
func (a *App) create(ctx context.Context, t *ticketsv1.Ticket, commandID string) (*ticketsv1.Ticket, bool, error) {
	if commandID != "" {
		t.TicketId = stableTicketID(t.WorkspaceId, commandID)
	}
	return a.createAt(ctx, t, commandID)
}

// createAt appends TicketCreated at t's own id: a conflict when the id is
// taken by another command's ticket.
func (a *App) createAt(ctx context.Context, t *ticketsv1.Ticket, commandID string) (*ticketsv1.Ticket, bool, error) {
	t.StatusChanges = []*ticketsv1.StatusChange{{Status: domain.StatusOpen, ChangedByUserId: &t.OwnerUserId, ChangedAtUnixSecs: t.CreatedAtUnixSecs}}
	meta := esproto.Meta(ctx, t.WorkspaceId, commandID, a.Now())
	return a.Tickets.Create(ctx, t.WorkspaceId, t.TicketId, meta, &ticketsv1.TicketCreated{Meta: meta, Ticket: t}, t)
}

// createdBy is the ticket a create with commandID made, when one did: a
// retried create answers it with the same status code, looked up before
// anything the first attempt checked (its agent deleted since, the
// conversation reported on again), as it would now fail or differ. An
// error when the key made it for another request.
func (a *App) createdBy(ctx context.Context, ws, commandID string) (*ticketsv1.Ticket, bool, error) {
	if commandID == "" {
		return nil, false, nil
	}
	t, seq, ok, err := a.Tickets.Made(ctx, ws, stableTicketID(ws, commandID), commandID)
	if ok && seq > 0 {
		// The first attempt may have died before projecting it.
		_ = a.ReadModel.Put(ctx, seq, t)
	}
	return t, ok, err
}

// stableTicketID is the id of the ticket a create with a command id makes,
// so a retry finds it.
func stableTicketID(ws, commandID string) string { return "tkt_" + esproto.StableID(ws, commandID) }

func fill(t *ticketsv1.Ticket, title, qa, issueType, priority *string, by string, at int64) {
	switch {
	case title != nil && strings.TrimSpace(*title) != "":
		t.Title = strings.TrimSpace(*title)
	case qa != nil:
		t.Title = domain.DeriveTitle(*qa)
	case len(t.TurnComments) > 0:
		t.Title = domain.DeriveTitle(t.TurnComments[0].Comment)
	}
	if issueType != nil {
		t.IssueType = *issueType
	}
	if priority != nil && *priority != "" {
		setPriority(t, *priority, by, at)
	}
	if t.Labels == nil {
		t.Labels = []string{}
	}
}

func setPriority(t *ticketsv1.Ticket, p, by string, at int64) {
	t.Priority = p
	t.PriorityChanges = append(t.PriorityChanges, &ticketsv1.PriorityChange{Priority: p, ChangedByUserId: by, ChangedAtUnixSecs: at})
}

func widenSeen(t *ticketsv1.Ticket, first, last *int64) {
	if first != nil && (t.FirstSeenUnixSecs == nil || *first < *t.FirstSeenUnixSecs) {
		t.FirstSeenUnixSecs = proto.Int64(*first)
	}
	if last != nil && (t.LastSeenUnixSecs == nil || *last > *t.LastSeenUnixSecs) {
		t.LastSeenUnixSecs = proto.Int64(*last)
	}
}

type turn struct {
	TurnIndex int32
	Comment   string
}

// turnsOf are a request's turn comments (the schema requires each
// turn_index).
func turnsOf(in []TurnCommentInput) []turn {
	out := make([]turn, 0, len(in))
	for _, tc := range in {
		if tc.TurnIndex != nil {
			out = append(out, turn{TurnIndex: int32(*tc.TurnIndex), Comment: tc.Comment})
		}
	}
	return out
}
