// Package aggregate is the repository every event-sourced service uses for
// aggregates whose events carry their whole state: reading the current
// state is one direct get of the subject's last event, and every change is
// a closure run against fresh state, appended with optimistic concurrency
// and retried on conflict, then projected inline.
package aggregate

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// conflictAttempts bounds how often a change retries against fresh state.
const conflictAttempts = 5

// Repo stores aggregates of state type S (a proto message pointer).
type Repo[S proto.Message] struct {
	Store *eventstore.Store
	// Subject is the aggregate's subject; an error means no such aggregate.
	Subject func(workspaceID, id string) (string, error)
	// StateOf extracts the state from an event (false: not this aggregate).
	StateOf func(proto.Message) (S, bool)
	// Gone reports a deleted aggregate (a tombstone): it reads as missing.
	Gone func(S) bool
	// Touch stamps a changed state with the time of the change.
	Touch func(S, time.Time)
	// Project writes a new state to the read model inline, so a caller
	// reads its own writes; the durable projector covers a crash.
	Project func(ctx context.Context, seq uint64, state S) error
	// NotFound and Conflict are the errors answered to callers.
	NotFound error
	Conflict error
	Log      *slog.Logger
	Now      func() time.Time
}

func (r *Repo[S]) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Get returns a live aggregate of the workspace and its stream sequence.
// An aggregate of another workspace lives on another subject, so it is
// simply not found.
func (r *Repo[S]) Get(ctx context.Context, workspaceID, id string) (S, uint64, error) {
	var zero S
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return zero, 0, r.NotFound
	}
	msg, seq, found, err := esproto.Last(ctx, r.Store, subject)
	if err != nil {
		return zero, 0, err
	}
	if !found {
		return zero, 0, r.NotFound
	}
	state, ok := r.StateOf(msg)
	if !ok || r.Gone(state) {
		return zero, 0, r.NotFound
	}
	return state, seq, nil
}

// Create appends the event that creates aggregate id (state is what it
// carries). With a command id, a retried create answers the first one's
// state and duplicate is true.
func (r *Repo[S]) Create(ctx context.Context, workspaceID, id string, meta *commonv1.EventMeta, ev proto.Message, state S) (S, bool, error) {
	var zero S
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return zero, false, err
	}
	res, err := r.record(ctx, subject, 0, meta, ev, state)
	if errors.Is(err, eventstore.ErrConflict) && meta.GetCommandId() != "" {
		res.Duplicate, err = true, nil // the first attempt won: answer with it
	}
	if err != nil {
		return zero, false, err
	}
	if res.Duplicate {
		got, seq, err := r.Get(ctx, workspaceID, id)
		if err == nil {
			r.project(ctx, subject, seq, got)
		}
		return got, true, err
	}
	return state, false, nil
}

// Mutation decides the event for the current state, changing next in
// place; a nil event means nothing changed.
type Mutation[S proto.Message] func(next S, meta *commonv1.EventMeta) (proto.Message, error)

// Update loads the aggregate, applies m to a copy and appends the event,
// retrying against fresh state when another writer got there first.
func (r *Repo[S]) Update(ctx context.Context, workspaceID, id, commandID string, m Mutation[S]) (S, error) {
	var out S
	err := eventstore.Retry(ctx, conflictAttempts, func() error {
		cur, seq, err := r.Get(ctx, workspaceID, id)
		if err != nil {
			return err
		}
		next := proto.Clone(cur).(S)
		meta := esproto.Meta(ctx, workspaceID, commandID, r.now())
		ev, err := m(next, meta)
		if err != nil || ev == nil {
			out = cur
			return err
		}
		if r.Touch != nil {
			r.Touch(next, r.now())
		}
		subject, _ := r.Subject(workspaceID, id)
		res, err := r.record(ctx, subject, seq, meta, ev, next)
		if err != nil {
			return err
		}
		if res.Duplicate {
			var seq uint64
			if out, seq, err = r.Get(ctx, workspaceID, id); err == nil {
				r.project(ctx, subject, seq, out)
			}
			return err
		}
		out = next
		return nil
	})
	if errors.Is(err, eventstore.ErrConflict) {
		var zero S
		return zero, r.Conflict
	}
	return out, err
}

// record appends ev and projects state inline.
func (r *Repo[S]) record(ctx context.Context, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message, state S) (eventstore.Appended, error) {
	res, err := esproto.Append(ctx, r.Store, subject, expected, meta, ev)
	if err != nil || res.Duplicate {
		return res, err
	}
	r.project(ctx, subject, res.Seq, state)
	return res, nil
}

// project writes state to the read model inline. A retried command the
// store answered as a duplicate projects the stored state too: its first
// attempt may have been appended by a process that died before
// projecting it, and the retry's caller expects to see it listed.
func (r *Repo[S]) project(ctx context.Context, subject string, seq uint64, state S) {
	if r.Project == nil {
		return
	}
	if err := r.Project(ctx, seq, state); err != nil {
		r.Log.WarnContext(ctx, "inline projection failed; the projector will catch up", "subject", subject, "err", err)
	}
}
