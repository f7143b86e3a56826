package aggregate

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// Step is one aggregate's change in a command over aggregates of several
// kinds (ChangeMany), made by its repository (Repo.Step).
type Step struct {
	subject   string
	commandID string
	// read loads the aggregate's current state and answers its last
	// record (r.NotFound when it is missing or deleted).
	read func(ctx context.Context) (eventlog.Record, error)
	// decide runs the mutation on a copy of what read loaded: its event,
	// or nil when it changes nothing.
	decide func(meta *commonv1.EventMeta, now time.Time) (proto.Message, error)
	// project writes the changed state to the read model.
	project func(ctx context.Context, seq uint64)
}

// Step is the change m makes to aggregate id, as one step of a command
// over several (ChangeMany, Repo.ChangeWith). Its event carries commandID
// (one of its own, CommandFor: a stream deduplicates message ids across
// its subjects).
func (r *Repo[S]) Step(workspaceID, id, commandID string, m Mutation[S]) (*Step, error) {
	return r.step(workspaceID, id, commandID, m, stepMust)
}

// StepOrMake is Step for an aggregate made by its first change: while it
// has no event, m changes an empty state, appended to its empty subject.
func (r *Repo[S]) StepOrMake(workspaceID, id, commandID string, m Mutation[S]) (*Step, error) {
	return r.step(workspaceID, id, commandID, m, stepOrMake)
}

// StepIfExists is Step for an aggregate the command changes only while it
// exists: missing or deleted, it is left out of the command.
func (r *Repo[S]) StepIfExists(workspaceID, id, commandID string, m Mutation[S]) (*Step, error) {
	return r.step(workspaceID, id, commandID, m, stepIfExists)
}

// What a step does about a missing (or deleted) aggregate.
type stepMode int

const (
	stepMust     stepMode = iota // fail with the repository's NotFound
	stepOrMake                   // make it (missing only)
	stepIfExists                 // leave it out (errStepAbsent)
)

// errStepAbsent is a StepIfExists step's read of a missing or deleted
// aggregate: the command goes on without it.
var errStepAbsent = errors.New("aggregate absent: step left out")

func (r *Repo[S]) step(workspaceID, id, commandID string, m Mutation[S], mode stepMode) (*Step, error) {
	subject, err := r.Subject(workspaceID, id)
	if err != nil {
		return nil, r.NotFound
	}
	var cur, next S
	return &Step{
		subject:   subject,
		commandID: commandID,
		read: func(ctx context.Context) (eventlog.Record, error) {
			rec, state, err := r.last(ctx, subject)
			switch {
			case mode == stepOrMake && rec.Seq == 0 && errors.Is(err, r.NotFound):
				state, err = state.ProtoReflect().Type().New().Interface().(S), nil
			case err == nil && r.gone(state):
				err = r.NotFound
			}
			if mode == stepIfExists && errors.Is(err, r.NotFound) {
				err = errStepAbsent
			}
			cur = state
			return rec, err
		},
		decide: func(meta *commonv1.EventMeta, now time.Time) (proto.Message, error) {
			next = proto.Clone(cur).(S)
			ev, err := m(next, meta)
			if ev != nil && err == nil && r.Touch != nil {
				r.Touch(next, now)
			}
			return ev, err
		},
		project: func(ctx context.Context, seq uint64) { r.project(ctx, subject, seq, next) },
	}, nil
}

// ChangeMany runs a command over several aggregates, of one kind or
// several, stored whole or not at all (eventlog.Store.AppendAll): every
// step decides on fresh state, and a conflict on any aggregate runs them
// all again. A keyed command (the steps' command ids derived from one)
// whose first attempt was stored changes nothing again: found on the last
// event of a step, or, after a conflict, in the first step's history.
func ChangeMany(ctx context.Context, env Env, workspaceID string, steps []*Step) error {
	err := eventlog.Retry(ctx, conflictAttempts, func() error {
		recs, err := readSteps(ctx, steps)
		if err != nil {
			return err
		}
		for i, s := range steps {
			if rec := recs[i]; rec != nil && s.commandID != "" && rec.CommandID == s.commandID {
				return esproto.SameRequestIn(ctx, *rec) // stored before: a replay
			}
		}
		var b batch
		if err := b.addSteps(ctx, workspaceID, env.Now(), steps, recs); err != nil {
			return err
		}
		if b.empty() {
			return nil
		}
		_, _, err = b.storeOrFind(ctx, env.Store)
		return err
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return apperr.ConcurrentUpdate
	}
	return err
}

// batch is the events of one command over several aggregates, appended
// together (eventlog.Store.AppendAll), each projected once stored.
type batch struct {
	writes  []eventlog.Write
	project []func(ctx context.Context, seq uint64)
}

// add encodes ev, to append to subject if its last sequence is still
// expected.
func (b *batch) add(ctx context.Context, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message, project func(ctx context.Context, seq uint64)) error {
	e, err := esproto.Encode(ctx, meta, ev)
	if err != nil {
		return err
	}
	b.writes = append(b.writes, eventlog.Write{Subject: subject, ExpectedSeq: expected, CommandID: meta.GetCommandId(), Event: e})
	b.project = append(b.project, project)
	return nil
}

func (b *batch) empty() bool { return len(b.writes) == 0 }

// store appends the batch, whole or not at all, and projects what it
// stored: it answers where each write went.
func (b *batch) store(ctx context.Context, st eventlog.Store) ([]eventlog.Appended, error) {
	res, err := st.AppendAll(ctx, b.writes)
	if err != nil {
		return nil, err
	}
	for i, project := range b.project {
		project(ctx, res[i].Seq)
	}
	return res, nil
}

// storeOrFind is store for a keyed command: where the batch conflicts
// and its lead's command id is found stored since (a first attempt of
// the same request), it answers that record and no error.
func (b *batch) storeOrFind(ctx context.Context, st eventlog.Store) ([]eventlog.Appended, *eventlog.Record, error) {
	res, err := b.store(ctx, st)
	if lead := b.writes[0]; errors.Is(err, eventlog.ErrConflict) && lead.CommandID != "" {
		rec, found, ferr := st.FindCommand(ctx, lead.Subject, lead.CommandID)
		if ferr != nil {
			return nil, nil, ferr
		}
		if found {
			return nil, &rec, esproto.SameRequestIn(ctx, rec)
		}
	}
	return res, nil, err
}

// readSteps reads every step's aggregate, all before any decides (a step
// may decide on what another read); a StepIfExists step whose aggregate
// is gone reads nil.
func readSteps(ctx context.Context, steps []*Step) ([]*eventlog.Record, error) {
	recs := make([]*eventlog.Record, len(steps))
	for i, s := range steps {
		rec, err := s.read(ctx)
		if errors.Is(err, errStepAbsent) {
			continue
		}
		if err != nil {
			return nil, err
		}
		recs[i] = &rec
	}
	return recs, nil
}

// addSteps decides each step as readSteps read it (recs), adding the
// events of those that change something to the batch; a step read nil is
// left out.
func (b *batch) addSteps(ctx context.Context, workspaceID string, now time.Time, steps []*Step, recs []*eventlog.Record) error {
	for i, s := range steps {
		if recs[i] == nil {
			continue
		}
		meta := esproto.Meta(ctx, workspaceID, s.commandID, now)
		ev, err := s.decide(meta, now)
		if err != nil {
			return err
		}
		if ev == nil {
			continue
		}
		if err := b.add(ctx, s.subject, recs[i].Seq, meta, ev, s.project); err != nil {
			return err
		}
	}
	return nil
}
