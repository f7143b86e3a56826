package app

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Merge folds other active tickets of the same agent into the target:
// their conversations move onto it, its priority rises to the highest
// among them, and they stay as status merged pointing at it.
//
// The target and its sources change as one command, stored whole or not
// at all (aggregate.Repo.ChangeAll): no reader sees the target holding a
// source's conversations while the source is still active, and merges at
// once cannot fold tickets into each other (A into B while B goes into A):
// the second to be stored finds its target merged, or a source changed,
// and runs again on what the first left, answering 409 where that makes
// the merge impossible.
//
// With a command id (an Idempotency-Key) the target's event carries it,
// and each source's its own derived from it: a replay answers the target
// as the first attempt left it, whatever its own body says (checking it
// would fail: its sources are merged by then).
func (a *App) Merge(ctx context.Context, caller principal.Caller, targetID string, sourceIDs []string) (*ticketsv1.Ticket, error) {
	var v apperr.Validator
	v.Check(len(sourceIDs) >= 1, "Give 1 to 100 ticket ids", "value_error", "body", "source_ticket_ids")
	for i, id := range sourceIDs {
		v.Check(id != targetID, "A ticket cannot be merged into itself", "value_error", "body", "source_ticket_ids", i)
		v.Check(!slices.Contains(sourceIDs[:i], id), "Duplicate ticket id", "value_error", "body", "source_ticket_ids", i)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	now := a.Now().Unix()
	ids := append([]string{targetID}, sourceIDs...)
	return a.Tickets.ChangeAll(ctx, caller.WorkspaceID, caller.CommandID, ids, func(next []*ticketsv1.Ticket, metas []*commonv1.EventMeta) ([]proto.Message, error) {
		t, sources := next[0], next[1:]
		if !domain.CanAbsorb(t.Status) {
			return nil, apperr.TicketCannotAbsorb(t.Status)
		}
		evs := make([]proto.Message, len(next))
		top := t.Priority
		before := proto.Clone(t).(*ticketsv1.Ticket)
		for i, s := range sources {
			if s.AgentId != t.AgentId {
				return nil, apperr.ValidationErrors{{Loc: []any{"body", "source_ticket_ids", i}, Msg: "The ticket belongs to another agent", Type: "value_error"}}
			}
			if !domain.IsActive(s.Status) {
				return nil, apperr.TicketNotMergeable(s.TicketId, s.Status)
			}
			for _, c := range s.ConversationIds {
				if !slices.Contains(t.ConversationIds, c) {
					t.ConversationIds = append(t.ConversationIds, c)
				}
			}
			top = domain.HigherPriority(top, s.Priority)
			widenSeen(t, s.FirstSeenUnixSecs, s.LastSeenUnixSecs)
			s.Status, s.MergedIntoTicketId = domain.StatusMerged, &targetID
			s.StatusChanges = append(s.StatusChanges, &ticketsv1.StatusChange{Status: domain.StatusMerged, ChangedByUserId: &caller.UserID, ChangedAtUnixSecs: now})
			evs[i+1] = &ticketsv1.TicketMerged{Meta: metas[i+1], Ticket: s, TargetTicketId: targetID, SourceTicketIds: []string{s.TicketId}}
		}
		if top != t.Priority {
			setPriority(t, top, caller.UserID, now)
		}
		evs[0] = &ticketsv1.TicketMerged{Meta: metas[0], Ticket: t, TargetTicketId: targetID, SourceTicketIds: sourceIDs,
			ChangedFields: absorbed(before, t)}
		return evs, nil
	})
}

// absorbed names the fields of a merge's target that taking its sources
// in changed (a merge's changed_fields, as an update's).
func absorbed(before, after *ticketsv1.Ticket) []string {
	var changed []string
	if len(after.ConversationIds) != len(before.ConversationIds) {
		changed = append(changed, "conversation_ids")
	}
	if after.Priority != before.Priority {
		changed = append(changed, "priority")
	}
	if after.GetFirstSeenUnixSecs() != before.GetFirstSeenUnixSecs() {
		changed = append(changed, "first_seen_unix_secs")
	}
	if after.GetLastSeenUnixSecs() != before.GetLastSeenUnixSecs() {
		changed = append(changed, "last_seen_unix_secs")
	}
	return changed
}
