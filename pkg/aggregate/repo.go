// Package aggregate is the repository every event-sourced service uses for
// aggregates whose events carry their whole state: reading the current
// state is one direct get of the subject's last event, and every change is
// a closure run against fresh state, appended with optimistic concurrency
// and retried on conflict, then projected inline.
package aggregate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// conflictAttempts bounds how often a change retries against fresh state
// (eventlog.Retry waits a random while between attempts, from 2 ms at
// most after the first loss to 512 ms by the last, about a second and a
// half in all): a crowd of writers to one aggregate each lands.
const conflictAttempts = 12

// Env is what every repository of a service shares: the event log, the
// logger and the clock.
type Env struct {
	Store eventlog.Store
	Log   *slog.Logger
	// Now is the clock (required): the process's, or a test's.
	Now func() time.Time
}

// Repo stores aggregates of state type S (a proto message pointer).
type Repo[S proto.Message] struct {
	Env
	// Subject is the aggregate's subject; an error means no such aggregate.
	Subject func(workspaceID, id string) (string, error)
	// Gone reports a deleted aggregate (a tombstone): it reads as missing.
	// Nil for an aggregate that is never deleted.
	Gone func(S) bool
	// Touch stamps a changed state with the time of the change.
	Touch func(S, time.Time)
	// Project writes a new state to the read model inline, so a caller
	// reads its own writes; the durable projector covers a crash.
	Project func(ctx context.Context, seq uint64, state S) error
	// NotFound is answered for a missing or deleted aggregate. A change
	// still conflicting after its retries answers apperr.ConcurrentUpdate.
	NotFound error
}

// Get returns a live aggregate of the workspace and its stream sequence.
// An aggregate of another workspace lives on another subject, so it is
// simply not found.
func (r *Repo[S]) Get(ctx context.Context, workspaceID, id string) (S, uint64, error) {
	state, rec, err := r.Latest(ctx, workspaceID, id)
	return state, rec.Seq, err
}

// Latest is Get with the record of the aggregate's last event: its
// sequence, type and time, for a caller that decides by them too.
func (r *Repo[S]) Latest(ctx context.Context, workspaceID, id string) (S, eventlog.Record, error) {
	var zero S
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return zero, eventlog.Record{}, r.NotFound
	}
	rec, state, err := r.last(ctx, subject)
	if err != nil {
		return zero, eventlog.Record{}, err
	}
	if r.gone(state) {
		return zero, eventlog.Record{}, r.NotFound
	}
	return state, rec, nil
}

// ErrStaleRead is GetSince's answer when the store answers an older state
// than one the caller knows is stored.
var ErrStaleRead = errors.New("a stale read of the event log")

// GetSince is Get for a caller that holds an event of the aggregate
// stored at seq (a consumer of its stream): the aggregate is then stored
// at seq or later, so an answer of none, or of an older state, is a stale
// one (a store between leaders) and is ErrStaleRead, to be asked again
// later, never taken for the aggregate's. A deletion stored since still
// answers NotFound.
func (r *Repo[S]) GetSince(ctx context.Context, workspaceID, id string, seq uint64) (S, uint64, error) {
	var zero S
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return zero, 0, r.NotFound
	}
	rec, state, err := r.last(ctx, subject)
	if rec.Seq < seq && (err == nil || errors.Is(err, r.NotFound)) { // none read: sequence 0
		return zero, rec.Seq, fmt.Errorf("%w: %s read at sequence %d, older than its event at %d", ErrStaleRead, subject, rec.Seq, seq)
	}
	if err != nil {
		return zero, 0, err
	}
	if r.gone(state) {
		return zero, 0, r.NotFound
	}
	return state, rec.Seq, nil
}

// gone reports a deleted aggregate; with no Gone, none is ever deleted.
func (r *Repo[S]) gone(state S) bool { return r.Gone != nil && r.Gone(state) }

// last reads subject's last event and the state it carries, deleted or
// not: one direct get.
func (r *Repo[S]) last(ctx context.Context, subject string) (eventlog.Record, S, error) {
	var zero S
	rec, found, err := r.Store.Last(ctx, subject)
	if err != nil {
		return rec, zero, err
	}
	if !found {
		return rec, zero, r.NotFound
	}
	_, state, ok, err := r.decode(rec)
	if err == nil && !ok {
		err = r.NotFound
	}
	return rec, state, err
}

// decode reads the event of rec and the state it carries; ok is false
// for an event of another kind of aggregate.
func (r *Repo[S]) decode(rec eventlog.Record) (msg proto.Message, state S, ok bool, err error) {
	if msg, err = esproto.Decode(rec); err != nil {
		return nil, state, false, err
	}
	state, ok = events.StateOf[S](msg)
	return msg, state, ok, nil
}

// Made is the aggregate a keyed create made (its id stable under the
// command id), for a retry to answer before checking anything its first
// attempt checked (what it named may be gone since): as it is now, with
// its sequence, or, deleted since, as that attempt left it (sequence 0).
// False when no attempt made it, or without a command id; an error when
// the key made it for another request (esproto.SameRequest).
func (r *Repo[S]) Made(ctx context.Context, workspaceID, id, commandID string) (S, uint64, bool, error) {
	var zero S
	if id == "" || commandID == "" {
		return zero, 0, false, nil
	}
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return zero, 0, false, nil
	}
	// One read answers the usual cases: nothing on the subject (a first
	// attempt, which every keyed create pays for) or the aggregate live
	// and last changed by the create. Only a replay of a create changed
	// or deleted since needs its history searched.
	rec, state, err := r.last(ctx, subject)
	if err != nil {
		return zero, 0, false, nil
	}
	if !r.gone(state) && (rec.CommandID == commandID || esproto.RequestDigest(ctx) == "") {
		if err := esproto.SameRequestIn(ctx, rec); err != nil {
			return zero, 0, false, err
		}
		return state, rec.Seq, true, nil
	}
	_, first, found, err := r.Recorded(ctx, workspaceID, id, commandID)
	switch {
	case err != nil:
		return zero, 0, false, err
	case !r.gone(state):
		return state, rec.Seq, true, nil
	case found:
		return first, 0, true, nil
	}
	return zero, 0, false, nil
}

// Recorded finds the event a command (by its id) appended to aggregate
// id, and the state it left: its last event first, then its history. A
// command that touches several aggregates asks it to tell a replay from a
// first attempt before checking what a replay would fail. The request in
// ctx must be the one that issued it (esproto.SameRequest).
func (r *Repo[S]) Recorded(ctx context.Context, workspaceID, id, commandID string) (proto.Message, S, bool, error) {
	msg, state, _, found, err := r.RecordedAt(ctx, workspaceID, id, commandID)
	return msg, state, found, err
}

// RecordedAt is Recorded, answering also the event's stream sequence.
func (r *Repo[S]) RecordedAt(ctx context.Context, workspaceID, id, commandID string) (proto.Message, S, uint64, bool, error) {
	var zero S
	subject, err := r.Subject(workspaceID, id)
	if err != nil || commandID == "" {
		return nil, zero, 0, false, nil
	}
	rec, found, err := r.Store.FindCommand(ctx, subject, commandID)
	if err != nil || !found {
		return nil, zero, 0, false, err
	}
	msg, state, ok, err := r.decode(rec)
	if err != nil || !ok {
		return nil, zero, 0, false, err
	}
	if err := esproto.SameRequest(ctx, events.MetaOf(msg)); err != nil {
		return nil, zero, 0, false, err
	}
	r.project(ctx, subject, rec.Seq, state) // its first attempt may have died before projecting
	return msg, state, rec.Seq, true, nil
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
	if errors.Is(err, eventlog.ErrConflict) && meta.GetCommandId() != "" {
		// A concurrent first attempt made the aggregate: answer with it,
		// if it was this request's.
		if _, _, _, err := r.Recorded(ctx, workspaceID, id, meta.GetCommandId()); err != nil {
			return zero, false, err
		}
		got, seq, err := r.Get(ctx, workspaceID, id)
		if err == nil {
			r.project(ctx, subject, seq, got)
		}
		return got, true, err
	}
	if err != nil {
		return zero, false, err
	}
	if res.Duplicate {
		// The store knew the command: answer what its first attempt
		// stored (a key the request in ctx did not first go with was
		// refused by the append, esproto.SameRequest), which is another
		// aggregate's creation when a command of no request reused it on
		// another id, as Update answers a replay.
		got, err := r.first(ctx, workspaceID, id, res.Seq)
		return got, true, err
	}
	return state, false, nil
}

// CommandFor is the command id of one command's change to one of the
// several aggregates it touches (a merge's sources, a bulk move's
// entries): a stream deduplicates message ids across all its subjects, so
// each aggregate's event needs its own. No command id stays none.
func CommandFor(commandID, id string) string {
	if commandID == "" {
		return ""
	}
	h := sha256.Sum256([]byte(commandID + "\x00" + id))
	return "cmd_" + hex.EncodeToString(h[:16])
}

// Mutation decides the event for the current state, changing next in
// place; a nil event means nothing changed.
type Mutation[S proto.Message] func(next S, meta *commonv1.EventMeta) (proto.Message, error)

// SeqMutation is a Mutation that also sees the stream sequence of the
// state it changes: a command over several aggregates may decide on
// whether one changed since it looked.
type SeqMutation[S proto.Message] func(next S, seq uint64, meta *commonv1.EventMeta) (proto.Message, error)

// Update loads the aggregate, applies m to a copy and appends the event,
// retrying against fresh state when another writer got there first.
//
// A command id (a request's Idempotency-Key) makes it answer a replay with
// the state the command's first attempt left, changing nothing again, even
// if m would now fail or change something else (a change made since):
// found on the last event (a read Update makes anyway), by the stream's
// duplicate window when the event is older, and in the aggregate's
// history when m fails or changes nothing (or the aggregate is gone).
// Beyond the window, a command followed by other changes whose replay m
// would apply again is the one case not caught. Wherever it is found, a
// replay must be of the request the command first went with
// (esproto.SameRequest), else it is refused.
func (r *Repo[S]) Update(ctx context.Context, workspaceID, id, commandID string, m Mutation[S]) (S, error) {
	return r.UpdateWith(ctx, workspaceID, id, commandID, m, nil)
}

// UpdateWith is Update for a command that changes other aggregates too,
// stored with this one's event in one atomic batch (ChangeWith).
func (r *Repo[S]) UpdateWith(ctx context.Context, workspaceID, id, commandID string, m Mutation[S], also Also[S]) (S, error) {
	out, _, err := r.ChangeWith(ctx, workspaceID, id, commandID, func(next S, _ uint64, meta *commonv1.EventMeta) (proto.Message, error) {
		return m(next, meta)
	}, also)
	return out, err
}

// Change is Update with a SeqMutation, answering also the stream sequence
// of the event behind the state it answers (the one it appended, or the
// command's first; where nothing was appended and no command found, the
// aggregate's last).
func (r *Repo[S]) Change(ctx context.Context, workspaceID, id, commandID string, m SeqMutation[S]) (S, uint64, error) {
	return r.ChangeWith(ctx, workspaceID, id, commandID, m, nil)
}

// Also answers, for the next state a command's mutation decided on, the
// changes the command makes to other aggregates with it (Repo.Step and
// its kin; none: nil). It runs again on each attempt.
type Also[S proto.Message] func(next S) ([]*Step, error)

// ChangeWith is Change for a command that changes other aggregates too:
// their steps (also) are stored in one atomic batch with this one's event
// (eventlog.Store.AppendAll), each on the state it was decided on, so a
// conflict on any of them runs the whole command again.
func (r *Repo[S]) ChangeWith(ctx context.Context, workspaceID, id, commandID string, m SeqMutation[S], also Also[S]) (S, uint64, error) {
	var out, zero S
	var outSeq uint64
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return zero, 0, r.NotFound
	}
	err = eventlog.Retry(ctx, conflictAttempts, func() error {
		rec, cur, err := r.last(ctx, subject)
		if err != nil {
			return err
		}
		if commandID != "" && rec.CommandID == commandID {
			if err := esproto.SameRequestIn(ctx, rec); err != nil {
				return err
			}
			out, outSeq = cur, rec.Seq // a replay of the last change, a deletion included
			r.project(ctx, subject, rec.Seq, cur)
			return nil
		}
		next := proto.Clone(cur).(S)
		meta := esproto.Meta(ctx, workspaceID, commandID, r.Now())
		var ev proto.Message
		if r.gone(cur) {
			err = r.NotFound
		} else {
			ev, err = m(next, rec.Seq, meta)
		}
		if err != nil || ev == nil {
			// Nothing to append: a replay of an older change answers what
			// that change left, not what it would do now.
			_, first, seq, found, ferr := r.RecordedAt(ctx, workspaceID, id, commandID)
			if ferr != nil {
				return ferr // another request under the key, or no telling
			}
			if found {
				out, outSeq = first, seq
				return nil
			}
			out, outSeq = cur, rec.Seq
			return err
		}
		if r.Touch != nil {
			r.Touch(next, r.Now())
		}
		var others []*Step
		if also != nil {
			if others, err = also(next); err != nil {
				return err
			}
		}
		if len(others) > 0 {
			out, outSeq, _, err = r.recordWith(ctx, workspaceID, id, subject, rec.Seq, meta, ev, next, others)
			return err
		}
		res, err := r.record(ctx, subject, rec.Seq, meta, ev, next)
		if err != nil {
			return err
		}
		outSeq = res.Seq
		if res.Duplicate {
			out, err = r.first(ctx, workspaceID, id, res.Seq)
			return err
		}
		out = next
		return nil
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return zero, 0, apperr.ConcurrentUpdate
	}
	return out, outSeq, err
}

// MultiMutation decides the events of a command over several aggregates:
// next holds a copy of each one's current state, to change in place; it
// answers an event per aggregate (nil: that one unchanged), each built
// with its own metas entry.
type MultiMutation[S proto.Message] func(next []S, metas []*commonv1.EventMeta) ([]proto.Message, error)

// ChangeAll changes several aggregates of a workspace as one command,
// stored whole or not at all (eventlog.Store.AppendAll), so no reader
// ever sees a part of it: m decides on the current state of each, and a
// conflict on any of them runs it again on fresh states. The first id
// leads: its event carries commandID, the others' CommandFor(commandID,
// id), and a replay of the command answers the lead as its first attempt
// left it, changing nothing, as Change does. It answers the lead's state.
func (r *Repo[S]) ChangeAll(ctx context.Context, workspaceID, commandID string, ids []string, m MultiMutation[S]) (S, error) {
	var out, zero S
	subjects := make([]string, len(ids))
	for i, id := range ids {
		subject, err := r.Subject(workspaceID, id)
		if err != nil {
			return zero, r.NotFound
		}
		subjects[i] = subject
	}
	err := eventlog.Retry(ctx, conflictAttempts, func() error {
		next, seqs := make([]S, len(ids)), make([]uint64, len(ids))
		for i, subject := range subjects {
			rec, cur, err := r.last(ctx, subject)
			if err != nil {
				return err
			}
			if i == 0 && commandID != "" && rec.CommandID == commandID {
				if err := esproto.SameRequestIn(ctx, rec); err != nil {
					return err
				}
				out = cur // a replay, the lead unchanged since
				r.project(ctx, subject, rec.Seq, cur)
				return nil
			}
			if r.gone(cur) {
				return r.NotFound
			}
			next[i], seqs[i] = proto.Clone(cur).(S), rec.Seq
		}
		now := r.Now()
		metas := make([]*commonv1.EventMeta, len(ids))
		for i, id := range ids {
			cmd := CommandFor(commandID, id)
			if i == 0 {
				cmd = commandID
			}
			metas[i] = esproto.Meta(ctx, workspaceID, cmd, now)
		}
		evs, err := m(next, metas)
		var b batch
		for i, ev := range evs {
			if err != nil || ev == nil {
				continue
			}
			if r.Touch != nil {
				r.Touch(next[i], now)
			}
			state := next[i]
			if err := b.add(ctx, subjects[i], seqs[i], metas[i], ev, func(ctx context.Context, seq uint64) { r.project(ctx, subjects[i], seq, state) }); err != nil {
				return err
			}
		}
		if err != nil || b.empty() {
			// Nothing to append: a replay of a command the lead has moved
			// on from answers what that command left.
			_, first, found, ferr := r.Recorded(ctx, workspaceID, ids[0], commandID)
			switch {
			case ferr != nil:
				return ferr
			case found:
				out = first
				return nil
			}
			out = next[0]
			return err
		}
		if _, err := b.store(ctx, r.Store); err != nil {
			return err
		}
		out = next[0]
		return nil
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return zero, apperr.ConcurrentUpdate
	}
	return out, err
}

// first is the state a command's first attempt stored at seq, which the
// store found its replay a duplicate of, projected again: that attempt
// may have died before projecting it. A command id of no request reused
// on another aggregate answers that one's state, as a create does: the
// same id answers the first result; on an aggregate of another kind, this
// one's as it is. (A keyed request's reuse is refused before: the store's
// duplicate answer is checked by esproto.Append.)
func (r *Repo[S]) first(ctx context.Context, workspaceID, id string, seq uint64) (S, error) {
	var zero S
	rec, err := r.Store.At(ctx, seq)
	if err != nil {
		return zero, err
	}
	_, state, ok, err := r.decode(rec)
	if err != nil {
		return zero, err
	}
	if !ok {
		state, _, err = r.Get(ctx, workspaceID, id)
		return state, err
	}
	r.project(ctx, rec.Subject, seq, state)
	return state, nil
}

// recordWith appends ev with the events of the other steps, whole or not
// at all, and projects each state stored inline. A command stored before
// (its id refused in the batch) answers the state its first attempt left.
func (r *Repo[S]) recordWith(ctx context.Context, workspaceID, id, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message, state S, others []*Step) (out S, seq uint64, replayed bool, err error) {
	var zero S
	var b batch
	if err := b.add(ctx, subject, expected, meta, ev, func(ctx context.Context, seq uint64) { r.project(ctx, subject, seq, state) }); err != nil {
		return zero, 0, false, err
	}
	recs, err := readSteps(ctx, others)
	if err != nil {
		return zero, 0, false, err
	}
	if err := b.addSteps(ctx, workspaceID, r.Now(), others, recs); err != nil {
		return zero, 0, false, err
	}
	res, stored, err := b.storeOrFind(ctx, r.Store)
	switch {
	case err != nil:
		return zero, 0, false, err
	case stored != nil: // a first attempt of this command
		first, err := r.first(ctx, workspaceID, id, stored.Seq)
		return first, stored.Seq, true, err
	}
	return state, res[0].Seq, false, nil
}

// CreateWith is Create for a command that changes other aggregates too,
// stored with the creating event in one atomic batch; a conflict on any
// of them runs it again.
func (r *Repo[S]) CreateWith(ctx context.Context, workspaceID, id string, meta *commonv1.EventMeta, ev proto.Message, state S, others []*Step) (S, bool, error) {
	if len(others) == 0 {
		return r.Create(ctx, workspaceID, id, meta, ev, state)
	}
	var out, zero S
	var replayed bool
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return zero, false, err
	}
	err = eventlog.Retry(ctx, conflictAttempts, func() error {
		var err error
		out, _, replayed, err = r.recordWith(ctx, workspaceID, id, subject, 0, meta, ev, state, others)
		return err
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return zero, false, apperr.ConcurrentUpdate
	}
	return out, replayed, err
}

// record appends ev and projects state inline.
func (r *Repo[S]) record(ctx context.Context, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message, state S) (eventlog.Appended, error) {
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
