package app

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
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
//
// With a command id (an Idempotency-Key) the target's event carries it
// and each source's its own derived from it: a replay answers the
// target as the first attempt left it and completes that attempt's
// sources, whatever its own body says (checking it would fail: its
// sources are merged by then).
func (a *App) Merge(ctx context.Context, caller principal.Caller, targetID string, sourceIDs []string) (*ticketsv1.Ticket, error) {
	commandID := caller.CommandID
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
	now := a.Now().Unix()
	if first, done, err := a.mergeReplayed(ctx, caller, targetID, now); done || err != nil {
		return first, err
	}
	sources, err := a.mergeable(ctx, ws, targetID, sourceIDs)
	if err != nil {
		// Another copy of this keyed merge may have won the race since the
		// check above (its sources are merged now): answer as it did.
		if first, done, rerr := a.mergeReplayed(ctx, caller, targetID, now); done || rerr != nil {
			return first, rerr
		}
		return nil, err
	}
	merged, err := a.change(ctx, ws, targetID, commandID, func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
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
	return merged, a.foldSources(ctx, caller, targetID, sourceIDs, now)
}

// mergeReplayed answers a keyed merge whose command the target already
// carries: the target as that attempt left it, that attempt's sources
// folded in (done). Not done without a command id or such an event.
func (a *App) mergeReplayed(ctx context.Context, caller principal.Caller, targetID string, now int64) (*ticketsv1.Ticket, bool, error) {
	commandID := caller.CommandID
	if commandID == "" {
		return nil, false, nil
	}
	ev, first, replay, err := a.Tickets.Recorded(ctx, caller.WorkspaceID, targetID, commandID)
	if err != nil {
		return nil, false, err
	}
	merged, ok := ev.(*ticketsv1.TicketMerged)
	if !replay || !ok {
		return nil, false, nil
	}
	return first, true, a.foldSources(ctx, caller, targetID, merged.GetSourceTicketIds(), now)
}

// mergeable reads the target and the sources and checks they may be
// merged (a target that can absorb, active sources of the same agent);
// it returns the sources.
func (a *App) mergeable(ctx context.Context, ws, targetID string, sourceIDs []string) ([]*ticketsv1.Ticket, error) {
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
	return sources, nil
}

// foldSources marks each source as merged into the target; one already
// merged is left as it is.
func (a *App) foldSources(ctx context.Context, caller principal.Caller, targetID string, sourceIDs []string, now int64) error {
	commandID := caller.CommandID
	for _, id := range sourceIDs {
		_, err := a.change(ctx, caller.WorkspaceID, id, aggregate.CommandFor(commandID, id), func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
			if t.Status == domain.StatusMerged {
				return nil, nil // already folded in by an earlier attempt
			}
			t.Status, t.MergedIntoTicketId = domain.StatusMerged, &targetID
			t.StatusChanges = append(t.StatusChanges, &ticketsv1.StatusChange{Status: domain.StatusMerged, ChangedByUserId: &caller.UserID, ChangedAtUnixSecs: now})
			return &ticketsv1.TicketMerged{Meta: meta, Ticket: t, TargetTicketId: targetID, SourceTicketIds: []string{t.TicketId}}, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
