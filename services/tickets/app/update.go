package app

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Nullable distinguishes an absent field from an explicit null, which
// PATCH uses to unassign or to clear the priority.
type Nullable struct {
	Set   bool
	Value *string
}

// UnmarshalJSON records that the field was present.
func (n *Nullable) UnmarshalJSON(b []byte) error {
	n.Set = true
	return json.Unmarshal(b, &n.Value)
}

// PatchInput is the public PATCH plus labels and issue_type.
type PatchInput struct {
	Title          *string   `json:"title"`
	Status         *string   `json:"status"`
	AssigneeUserID Nullable  `json:"assignee_user_id"`
	Priority       Nullable  `json:"priority"`
	IssueType      Nullable  `json:"issue_type"`
	Labels         *[]string `json:"labels"`
	// NeedsClustering true asks the clustering step to look at the ticket
	// again; false marks it as clustered by hand.
	NeedsClustering *bool `json:"needs_clustering"`
}

// Update applies a PATCH. A status change is validated by the state
// machine (409 when illegal); every change is recorded. With a command id
// (an Idempotency-Key) a replay answers the first result, as for every
// change below.
func (a *App) Update(ctx context.Context, caller principal.Caller, ticketID string, in PatchInput) (*ticketsv1.Ticket, error) {
	commandID := caller.CommandID
	var v apperr.Validator
	if in.AssigneeUserID.Value != nil && *in.AssigneeUserID.Value == Me {
		in.AssigneeUserID.Value = &caller.UserID // "@me": the caller, who must be a member too
	}
	if in.AssigneeUserID.Value != nil {
		member, locked, err := a.isMember(ctx, caller.WorkspaceID, *in.AssigneeUserID.Value)
		if err != nil {
			return nil, err
		}
		v.Check(member, "The assignee is not a member of this workspace", "value_error", "body", "assignee_user_id")
		v.Check(!locked, "The assignee's account is locked in this workspace", "value_error", "body", "assignee_user_id")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	now := a.Now().Unix()
	return a.change(ctx, caller.WorkspaceID, ticketID, commandID, func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
		var changed []string
		if in.Title != nil && strings.TrimSpace(*in.Title) != t.Title {
			t.Title, changed = strings.TrimSpace(*in.Title), append(changed, "title")
		}
		if in.AssigneeUserID.Set && !equalPtr(in.AssigneeUserID.Value, t.AssigneeUserId) {
			t.AssigneeUserId, changed = in.AssigneeUserID.Value, append(changed, "assignee_user_id")
		}
		if in.Priority.Set {
			p := ""
			if in.Priority.Value != nil {
				p = *in.Priority.Value
			}
			if p != t.Priority {
				setPriority(t, p, caller.UserID, now)
				changed = append(changed, "priority")
			}
		}
		if in.IssueType.Set {
			it := ""
			if in.IssueType.Value != nil {
				it = *in.IssueType.Value
			}
			if it != t.IssueType {
				t.IssueType, changed = it, append(changed, "issue_type")
			}
		}
		if in.Labels != nil && !slices.Equal(*in.Labels, t.Labels) {
			t.Labels, changed = *in.Labels, append(changed, "labels")
		}
		if in.NeedsClustering != nil && *in.NeedsClustering != t.NeedsClustering {
			t.NeedsClustering, changed = *in.NeedsClustering, append(changed, "needs_clustering")
		}
		if t.Status == domain.StatusMerged && len(changed) > 0 {
			return nil, apperr.TicketMergedIsFinal
		}
		previous := t.Status
		if in.Status != nil && *in.Status != t.Status {
			if *in.Status == domain.StatusMerged {
				return nil, apperr.TicketMergedOnlyByMerge
			}
			if !domain.CanTransition(t.Status, *in.Status) {
				return nil, apperr.TicketTransition(t.Status, *in.Status)
			}
			t.Status = *in.Status
			t.StatusChanges = append(t.StatusChanges, &ticketsv1.StatusChange{Status: t.Status, ChangedByUserId: &caller.UserID, ChangedAtUnixSecs: now})
			// Fields changed in the same PATCH travel with the status event.
			return &ticketsv1.TicketStatusChanged{Meta: meta, Ticket: t, PreviousStatus: previous}, nil
		}
		if len(changed) == 0 {
			return nil, nil
		}
		return &ticketsv1.TicketUpdated{Meta: meta, Ticket: t, ChangedFields: changed}, nil
	})
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// AddComment appends a ticket comment.
func (a *App) AddComment(ctx context.Context, caller principal.Caller, ticketID string, in CommentInput) (*ticketsv1.Ticket, error) {
	commandID := caller.CommandID
	return a.change(ctx, caller.WorkspaceID, ticketID, commandID, func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
		if t.Status == domain.StatusMerged {
			return nil, apperr.TicketMergedIsFinal
		}
		t.TicketComments = append(t.TicketComments, &ticketsv1.Comment{Comment: in.Comment, CreatedAtUnixSecs: a.Now().Unix(), OwnerUserId: &caller.UserID})
		return &ticketsv1.TicketCommented{Meta: meta, Ticket: t}, nil
	})
}

// AddTurnComment appends a comment on one transcript turn.
func (a *App) AddTurnComment(ctx context.Context, caller principal.Caller, ticketID string, in TurnCommentInput) (*ticketsv1.Ticket, error) {
	commandID := caller.CommandID
	turns := turnsOf([]TurnCommentInput{in})
	if len(turns) == 0 {
		return nil, apperr.ValidationErrors{{Loc: []any{"body", "turn_index"}, Msg: "Field required", Type: "missing"}}
	}
	return a.change(ctx, caller.WorkspaceID, ticketID, commandID, func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
		if t.Status == domain.StatusMerged {
			return nil, apperr.TicketMergedIsFinal
		}
		t.TurnComments = append(t.TurnComments, &ticketsv1.TurnComment{TurnIndex: turns[0].TurnIndex, Comment: turns[0].Comment, CreatedAtUnixSecs: a.Now().Unix(), OwnerUserId: &caller.UserID})
		return &ticketsv1.TicketCommented{Meta: meta, Ticket: t}, nil
	})
}

// Delete removes a ticket: only its creator or a workspace admin may.
func (a *App) Delete(ctx context.Context, caller principal.Caller, ticketID string) error {
	commandID := caller.CommandID
	_, err := a.change(ctx, caller.WorkspaceID, ticketID, commandID, func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
		if t.OwnerUserId != caller.UserID && !caller.IsAdmin() {
			return nil, apperr.NotTicketOwner
		}
		now := a.Now().Unix()
		t.DeletedAtUnixSecs = &now
		return &ticketsv1.TicketDeleted{Meta: meta, Ticket: t}, nil
	})
	return err
}
