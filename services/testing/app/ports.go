package app

import (
	"context"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// The ports below are what the testing use cases need beyond the event
// logs of tests, folders and invocations (eventlog.Store) and of agents'
// configurations (eventlog.Store too). adapters implements each on
// JetStream and in memory; each has one conformance suite (runslogtest,
// jobqueuetest, counterstest, feedtest) both pass.

// Record is one stored message of a log: an event (decoded with
// esproto.Decode) or a small record such as a queued total.
type Record = eventlog.Record

// Message is one message to store: on subject, once per ID.
type Message struct {
	Subject string
	ID      string // what makes a retry a duplicate
	Header  eventlog.Header
	Data    []byte
}

// eventMessage is ev as a message to store on subject under id: its data,
// and its metadata in the headers every stored event carries.
func eventMessage(subject, id string, ev eventlog.Event) Message {
	h := eventlog.Header{}
	for k, v := range ev.Header {
		h[k] = v
	}
	h.Set(events.HeaderEventID, ev.ID)
	h.Set(events.HeaderEventType, ev.Type)
	h.Set(events.HeaderSchema, ev.Schema)
	h.Set(events.HeaderSchemaVersion, ev.SchemaVersion)
	h.Set(events.HeaderWorkspaceID, ev.Workspace)
	return Message{Subject: subject, ID: id, Header: h, Data: ev.Data}
}

// RunsLog is the runs log: each run's results and each test's result
// groups, and the records that mark an invocation's way to completion
// ("queued", "completing"). Every subject keeps its history.
type RunsLog interface {
	// Publish stores m unless a message with its ID was stored within the
	// dedup window; duplicate says it was (nothing new was stored).
	Publish(ctx context.Context, m Message) (duplicate bool, err error)
	// Last is subject's newest record; found is false when it has none.
	Last(ctx context.Context, subject string) (rec Record, found bool, err error)
	// At is the record stored at seq.
	At(ctx context.Context, seq uint64) (Record, error)
	// EachLast calls fn with the newest record of every subject matching
	// filter, in log order, holding none of them in memory. An error fn
	// returns ends the read, and EachLast returns it (so does EachHeader).
	EachLast(ctx context.Context, filter string, fn func(Record) error) error
	// EachHeader calls fn with every record matching filter, in log order,
	// with its subject, sequence and headers; its data may be left out
	// (read it with At when needed).
	EachHeader(ctx context.Context, filter string, fn func(Record) error) error
}

// JobQueue is the runners' work queue: a job stays on it until a runner
// has done it.
type JobQueue interface {
	// Enqueue queues n jobs, job(i) being the i-th; a job whose ID was
	// queued within the dedup window is dropped, so a retried enqueue
	// queues nothing twice.
	Enqueue(ctx context.Context, n int, job func(i int) (Message, error)) error
	// Purge drops every waiting job whose subject matches filter.
	Purge(ctx context.Context, filter string) error
	// Waiting reports whether any job whose subject matches filter is
	// still on the queue (waiting, or taken and not yet done).
	Waiting(ctx context.Context, filter string) (bool, error)
}

// Counters are the progress counters runners add to.
type Counters interface {
	// Count is subject's count; 0 when nothing was counted.
	Count(ctx context.Context, subject string) (int64, error)
}

// InvocationFeed delivers every invocation event of the testing log to
// one durable reader (the enqueuer), in order, at least once.
type InvocationFeed interface {
	// Follow calls handle with each event not yet handled, until ctx
	// ends. An event handle returns nil for is done; one it fails is
	// delivered again later. handle calls working while an event takes
	// long, so it is not taken for abandoned.
	Follow(ctx context.Context, handle func(ctx context.Context, rec Record, working func()) error) error
}

// Ports are the adapters app.New wires.
type Ports struct {
	Testing     eventlog.Store // tests, folders and invocations
	Agents      eventlog.Store // agents, read for an agent's configuration
	Runs        RunsLog
	Jobs        JobQueue
	Counts      Counters
	Invocations InvocationFeed
}
