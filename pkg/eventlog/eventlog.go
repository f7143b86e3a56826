// Package eventlog is the event store as the use cases see it: one log
// per bounded context, one subject per aggregate, appends guarded by the
// subject's last sequence (optimistic concurrency) and deduplicated by
// command id. It declares the port; pkg/eventstore implements it on
// JetStream and pkg/eventlog/memlog in memory, and both pass the one
// conformance suite in pkg/eventlog/eventlogtest.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// ErrConflict means the aggregate changed since it was read (or, for a
// create, already exists). Callers reload and retry, or answer 409.
var ErrConflict = errors.New("event store: concurrent change (expected sequence did not match)")

// IsUnavailable reports whether err is one a retry may cure: the log did
// not answer (a stream between leaders, nothing in time), and nothing
// was decided. Adapters mark such errors with an Unavailable() bool
// method.
func IsUnavailable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}

// AnySeq as the expected sequence appends whatever the subject holds:
// for subjects with a single writer at a time, such as a run's results,
// where the command id alone makes retries idempotent.
const AnySeq = ^uint64(0)

// Header carries an event's extra metadata (a trace context, say), keyed
// exactly as given.
type Header map[string][]string

// Get is the first value of key, or "".
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set replaces key's values with value.
func (h Header) Set(key, value string) { h[key] = []string{value} }

// Event is one event to append.
type Event struct {
	ID            string // event id; generated when empty
	Type          string
	Schema        string
	SchemaVersion string
	Workspace     string
	Data          []byte
	Header        Header // extra headers, e.g. traceparent
}

// Record is one stored event.
type Record struct {
	Seq       uint64
	Subject   string
	Type      string
	EventID   string
	Workspace string
	// CommandID is the command id the event was appended with, or its
	// own event id when it had none.
	CommandID string
	Header    Header
	Data      []byte
	Time      time.Time
}

// Appended is the outcome of an append.
type Appended struct {
	Seq uint64
	// Duplicate is true when the command id was seen before: nothing new
	// was written and Seq is the original event's sequence.
	Duplicate bool
}

// Store appends to and reads from one bounded context's log.
type Store interface {
	// Append writes ev to subject if the subject's last sequence is still
	// expectedSeq (0: the subject must be empty; AnySeq: whatever it
	// holds). A non-empty commandID makes it idempotent: a retry, even
	// with its now stale expected sequence, answers the first append's
	// sequence as a duplicate. ErrConflict otherwise.
	Append(ctx context.Context, subject string, expectedSeq uint64, commandID string, ev Event) (Appended, error)
	// Last is subject's newest event; found is false for an empty subject.
	Last(ctx context.Context, subject string) (rec Record, found bool, err error)
	// At is the event stored at seq; an error when there is none.
	At(ctx context.Context, seq uint64) (Record, error)
	// Load is subject's whole history in order and its last sequence (0
	// for an empty subject), as of the call.
	Load(ctx context.Context, subject string) ([]Record, uint64, error)
	// FindCommand finds the event commandID appended to subject, however
	// long ago.
	FindCommand(ctx context.Context, subject, commandID string) (Record, bool, error)
	// AppendAll writes every append of the batch or none of them, each
	// guarded as Append guards it (on distinct subjects), at consecutive
	// sequences in the batch's order: a command over several aggregates
	// is stored whole or not at all. ErrConflict, nothing written, when a
	// subject's last sequence is not its expected one, or when a command
	// id of the batch was stored before: a retried batch finds its first
	// attempt by its command ids (FindCommand).
	AppendAll(ctx context.Context, batch []Write) ([]Appended, error)
}

// Write is one append of a batch (Store.AppendAll): the arguments Append
// takes.
type Write struct {
	Subject     string
	ExpectedSeq uint64
	CommandID   string
	Event       Event
}

// ErrBadBatch is AppendAll's answer to a batch of nothing, or of two
// appends to one subject (the second's expectation cannot be known).
var ErrBadBatch = errors.New("event store: a batch of no appends, or of two to one subject")

// CheckBatch refuses what no store can append as one batch
// (ErrBadBatch).
func CheckBatch(batch []Write) error {
	if len(batch) == 0 {
		return ErrBadBatch
	}
	seen := make(map[string]bool, len(batch))
	for _, w := range batch {
		if seen[w.Subject] {
			return fmt.Errorf("%w: %s twice", ErrBadBatch, w.Subject)
		}
		seen[w.Subject] = true
	}
	return nil
}

// Retry runs fn until it returns something other than a conflict, at most
// attempts times; fn reloads fresh state each time. Between attempts it
// waits a random while, up to 1 ms doubling to 256 ms (conflictBackOff):
// writers that lost to the same append would otherwise all read and
// append again at once, and of many writers to one aggregate (forty
// comments sent together to one ticket) some ran out of attempts and
// were answered 409.
func Retry(ctx context.Context, attempts int, fn func() error) error {
	b := conflictBackOff()
	var err error
	for attempt := range max(attempts, 1) {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-time.After(b.NextBackOff()):
			}
		}
		if err = fn(); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return err
}

// conflictBackOff is Retry's wait between attempts: from nothing to twice
// an interval (losers spread out) of 1 ms doubling to 256 ms. A writer
// that lost once tries again within 2 ms; a crowd spreads over the
// growing intervals until each has landed. Set by options, which the
// constructor applies before it starts the first interval: fields set
// after it leave the first wait drawn from its default 500 ms.
func conflictBackOff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(backoff.WithInitialInterval(time.Millisecond), backoff.WithMaxInterval(256*time.Millisecond),
		backoff.WithMaxElapsedTime(0), backoff.WithRandomizationFactor(1))
}

// FindCommand is FindCommand for stores without an index of command ids:
// newest first (a retry is almost always of the latest event), one read
// when it is the last, else the subject's history.
func FindCommand(ctx context.Context, s Store, subject, commandID string) (Record, bool, error) {
	last, found, err := s.Last(ctx, subject)
	if err != nil || !found {
		return Record{}, false, err
	}
	if last.CommandID == commandID {
		return last, true, nil
	}
	recs, _, err := s.Load(ctx, subject)
	if err != nil {
		return Record{}, false, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].CommandID == commandID {
			return recs[i], true, nil
		}
	}
	return Record{}, false, nil
}
