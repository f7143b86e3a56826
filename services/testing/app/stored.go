package app

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// The review events (labels, analyses, re-judged votes) are read back from
// the runs log the same way, whatever their type.

// decodeAs decodes a record of the runs log as the event type E.
func decodeAs[E proto.Message](rec Record) (E, error) {
	var zero E
	msg, err := esproto.Decode(rec)
	if err != nil {
		return zero, err
	}
	ev, ok := msg.(E)
	if !ok {
		return zero, fmt.Errorf("not a %T: %T", zero, msg)
	}
	return ev, nil
}

// eachStored calls fn with every event of type E stored on filter, in
// order. The scan gives headers: a body is read where it was left out.
func eachStored[E proto.Message](ctx context.Context, a *App, ws, filter string, fn func(Record, E) error) error {
	return a.scan(ctx, ws, filter, a.Runs.EachHeader, func(rec Record) error {
		if len(rec.Data) == 0 {
			full, err := a.Runs.At(ctx, rec.Seq)
			if err != nil {
				return err
			}
			rec = full
		}
		ev, err := decodeAs[E](rec)
		if err != nil {
			return err
		}
		return fn(rec, ev)
	})
}

// storedByCommand is the event of type E that commandID stored on
// subject, if any (the last, should there be several): only its body is
// read. An error when the command was another request's
// (esproto.SameRequest).
func storedByCommand[E proto.Message](ctx context.Context, a *App, ws, subject, commandID string) (E, bool, error) {
	var found E
	var seq uint64
	ok := false
	err := a.scan(ctx, ws, subject, a.Runs.EachHeader, func(rec Record) error {
		if rec.CommandID == commandID {
			seq, ok = rec.Seq, true
		}
		return nil
	})
	if err != nil || !ok {
		return found, false, err
	}
	rec, err := a.Runs.At(ctx, seq)
	if err != nil {
		return found, false, err
	}
	found, err = decodeAs[E](rec)
	if err == nil {
		err = esproto.SameRequest(ctx, events.MetaOf(found))
	}
	return found, err == nil, err
}

// storedBefore is the event of type E an earlier try of c's command
// stored on subject, if any; a request without an Idempotency-Key has no
// earlier try.
func storedBefore[E proto.Message](ctx context.Context, a *App, c principal.Caller, subject string) (E, bool, error) {
	if c.CommandID == "" {
		var none E
		return none, false, nil
	}
	return storedByCommand[E](ctx, a, c.WorkspaceID, subject, c.CommandID)
}

// storeSealed stores ev (made with meta, sealing mine) as storeOnce does
// and answers mine, or, when the command stored an event first, what open
// reads of that one.
func storeSealed[T any, E proto.Message](ctx context.Context, a *App, c principal.Caller, subject, ownID string, meta *commonv1.EventMeta, ev E, mine T, open func(context.Context, E) (T, error)) (T, error) {
	stored, err := storeOnce(ctx, a, c, subject, ownID, meta, ev)
	if err != nil {
		var zero T
		return zero, err
	}
	if any(stored) == any(ev) {
		return mine, nil
	}
	return open(ctx, stored)
}

// storeOnce stores ev (made with meta) on subject, its message id the
// caller's command id, else ownID. A retry of the command within the runs
// log's duplicate window that raced the caller's look-up stores nothing:
// the event the first try stored is answered instead. The log keeps a
// message id once across all its subjects, so a command id it knows that
// is not on subject went with another request (the key sent for another
// run or conversation): refused, as nothing of this one was stored.
func storeOnce[E proto.Message](ctx context.Context, a *App, c principal.Caller, subject, ownID string, meta *commonv1.EventMeta, ev E) (E, error) {
	var zero E
	e, err := esproto.Encode(ctx, meta, ev)
	if err != nil {
		return zero, err
	}
	id := c.CommandID
	if id == "" {
		id = ownID
	}
	dup, err := a.Runs.Publish(ctx, eventMessage(subject, id, e))
	if err != nil {
		return zero, err
	}
	if dup {
		if first, found, err := storedByCommand[E](ctx, a, c.WorkspaceID, subject, id); err != nil || found {
			return first, err
		}
		if c.CommandID != "" {
			return zero, apperr.IdempotencyKeyReused
		}
	}
	return ev, nil
}
