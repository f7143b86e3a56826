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
// The target and each source are separate aggregates, written one after
// the other. Each step is idempotent (conversations are added once, the
// priority only rises, a merged source is skipped), so retrying an
// interrupted merge completes it without merging anything twice.
func (a *App) Merge(ctx context.Context, caller principal.Principal, targetID string, sourceIDs []string) (*ticketsv1.Ticket, error) {
	var v apperr.Validator
	v.Check(len(sourceIDs) >= 1, "Give 1 to 100 ticket ids", "value_error", "body", "source_ticket_ids")
	for i, id := range sourceIDs {
		v.Check(id != targetID, "A ticket cannot be merged into itself", "value_error", "body", "source_ticket_ids", i)
		v.Check(!slices.Contains(sourceIDs[:i], id), "Duplicate ticket id", "value_error", "body", "source_ticket_ids", i)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	ws := caller.WorkspaceID
	target, _, err := a.Get(ctx, ws, targetID)
	if err != nil {
		return nil, err
	}
	if !domain.CanAbsorb(target.Status) {
		return nil, apperr.TicketCannotAbsorb(target.Status)
	}
	var sources []*ticketsv1.Ticket
	for i, id := range sourceIDs {
		s, _, err := a.Get(ctx, ws, id)
		if err != nil {
			return nil, err
		}
		if s.AgentId != target.AgentId {
			return nil, apperr.ValidationErrors{{Loc: []any{"body", "source_ticket_ids", i}, Msg: "The ticket belongs to another agent", Type: "value_error"}}
		}
		if !domain.IsActive(s.Status) {
			return nil, apperr.TicketNotMergeable(id, s.Status)
		}
		sources = append(sources, s)
	}
	now := a.now().Unix()
	merged, err := a.change(ctx, ws, targetID, "", func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
		top := t.Priority
		for _, s := range sources {
			for _, c := range s.ConversationIds {
				if !slices.Contains(t.ConversationIds, c) {
					t.ConversationIds = append(t.ConversationIds, c)
				}
			}
			top = domain.HigherPriority(top, s.Priority)
			widenSeen(t, s.FirstSeenUnixSecs, s.LastSeenUnixSecs)
		}
		if top != t.Priority {
			setPriority(t, top, caller.UserID, now)
		}
		return &ticketsv1.TicketMerged{Meta: meta, Ticket: t, TargetTicketId: targetID, SourceTicketIds: sourceIDs}, nil
	})
	if err != nil {
		return nil, err
	}
	for _, s := range sources {
		_, err := a.change(ctx, ws, s.TicketId, "", func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
			if t.Status == domain.StatusMerged {
				return nil, nil // already folded in by an earlier attempt
			}
			t.Status, t.MergedIntoTicketId = domain.StatusMerged, &targetID
			t.StatusChanges = append(t.StatusChanges, &ticketsv1.StatusChange{Status: domain.StatusMerged, ChangedByUserId: &caller.UserID, ChangedAtUnixSecs: now})
			return &ticketsv1.TicketMerged{Meta: meta, Ticket: t, TargetTicketId: targetID, SourceTicketIds: []string{t.TicketId}}, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return merged, nil
}
