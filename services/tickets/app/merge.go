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
// Merges running at once must not fold tickets into each other (A into B
// while B goes into A: both merged, neither left). So the target absorbs
// only while it is not merged, and a source is folded only if it has not
// changed since: since this merge read it, or on a replay since the
// target absorbed it. A source that changed (it absorbed a ticket, got a
// conversation) is not folded, and the merge answers 409
// concurrent_update: sent again, it takes the source as it now is.
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
	sources, seqs, err := a.mergeable(ctx, ws, targetID, sourceIDs)
	if err != nil {
		// Another copy of this keyed merge may have won the race since the
		// check above (its sources are merged now): answer as it did.
		if first, done, rerr := a.mergeReplayed(ctx, caller, targetID, now); done || rerr != nil {
			return first, rerr
		}
		return nil, err
	}
	merged, _, err := a.Tickets.Change(ctx, ws, targetID, commandID, func(t *ticketsv1.Ticket, _ uint64, meta *commonv1.EventMeta) (proto.Message, error) {
		if !domain.CanAbsorb(t.Status) { // merged since mergeable read it
			return nil, apperr.TicketCannotAbsorb(t.Status)
		}
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
	unchanged := func(id string, seq uint64) bool { return seq == seqs[id] }
	return merged, a.foldSources(ctx, caller, targetID, sourceIDs, now, unchanged)
}

// mergeReplayed answers a keyed merge whose command the target already
// carries: the target as that attempt left it, that attempt's sources
// folded in (done). Not done without a command id or such an event.
func (a *App) mergeReplayed(ctx context.Context, caller principal.Caller, targetID string, now int64) (*ticketsv1.Ticket, bool, error) {
	commandID := caller.CommandID
	if commandID == "" {
		return nil, false, nil
	}
	ev, first, absorbedAt, replay, err := a.Tickets.RecordedAt(ctx, caller.WorkspaceID, targetID, commandID)
	if err != nil {
		return nil, false, err
	}
	merged, ok := ev.(*ticketsv1.TicketMerged)
	if !replay || !ok {
		return nil, false, nil
	}
	unchanged := func(_ string, seq uint64) bool { return seq < absorbedAt }
	return first, true, a.foldSources(ctx, caller, targetID, merged.GetSourceTicketIds(), now, unchanged)
}

// mergeable reads the target and the sources and checks they may be
// merged (a target that can absorb, active sources of the same agent);
// it returns the sources and the sequence each was read at.
func (a *App) mergeable(ctx context.Context, ws, targetID string, sourceIDs []string) ([]*ticketsv1.Ticket, map[string]uint64, error) {
	target, _, err := a.Get(ctx, ws, targetID)
	if err != nil {
		return nil, nil, err
	}
	if !domain.CanAbsorb(target.Status) {
		return nil, nil, apperr.TicketCannotAbsorb(target.Status)
	}
	var sources []*ticketsv1.Ticket
	seqs := map[string]uint64{}
	for i, id := range sourceIDs {
		s, seq, err := a.Get(ctx, ws, id)
		if err != nil {
			return nil, nil, err
		}
		if s.AgentId != target.AgentId {
			return nil, nil, apperr.ValidationErrors{{Loc: []any{"body", "source_ticket_ids", i}, Msg: "The ticket belongs to another agent", Type: "value_error"}}
		}
		if !domain.IsActive(s.Status) {
			return nil, nil, apperr.TicketNotMergeable(id, s.Status)
		}
		sources, seqs[id] = append(sources, s), seq
	}
	return sources, seqs, nil
}

// foldSources marks each source as merged into the target. One already
// merged into it is left as it is, one merged into another is refused,
// and one that changed since the target took it in (unchanged says, from
// the sequence of its state) is not folded: 409 concurrent_update.
func (a *App) foldSources(ctx context.Context, caller principal.Caller, targetID string, sourceIDs []string, now int64, unchanged func(id string, seq uint64) bool) error {
	commandID := caller.CommandID
	for _, id := range sourceIDs {
		_, _, err := a.Tickets.Change(ctx, caller.WorkspaceID, id, aggregate.CommandFor(commandID, id), func(t *ticketsv1.Ticket, seq uint64, meta *commonv1.EventMeta) (proto.Message, error) {
			if t.Status == domain.StatusMerged {
				if t.GetMergedIntoTicketId() == targetID {
					return nil, nil // already folded in by an earlier attempt
				}
				return nil, apperr.TicketNotMergeable(id, t.Status) // by another merge
			}
			if !unchanged(id, seq) {
				return nil, apperr.ConcurrentUpdate
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
