// Package qafeedtest is the conformance suite of app.QAFeed: every
// implementation (JetStream durable consumers, memory) feeds each
// source's messages in stream order and in bounded batches, feeds a
// failed batch again until it is handled, returns when its context ends,
// keeps its sources apart and splits a source between replicas, and hands
// each message over as the QA worker reads it.
package qafeedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Message is one message as its producer stores it on a source.
type Message struct {
	Subject string
	// Event is the protobuf event stored on QARuns and QATickets, encoded
	// as the event store encodes an append.
	Event proto.Message
	// Body is stored as is: on QAPlatform the JSON envelope; on a protobuf
	// source, in place of Event's encoding (a body that does not decode as
	// Event's type).
	Body []byte
	// Traceparent is the trace of the command that stored it.
	Traceparent string
	// RunStatus is, on QARuns, the status its producer states beside the
	// body (events.HeaderRunStatus).
	RunStatus string
}

// Encoded is m's Event as the event store encodes an append of it, in
// m's trace; a Body m sets stands in for the encoding.
func Encoded(t testing.TB, m Message) eventlog.Event {
	t.Helper()
	ctx := tracing.WithRequestTrace(context.Background(), m.Traceparent)
	e, err := esproto.Encode(ctx, esproto.Meta(ctx, "", "", time.Now()), m.Event)
	if err != nil {
		t.Fatal(err)
	}
	if m.Body != nil {
		e.Data = m.Body
	}
	return e
}

// Put stores messages on a source, in order, as their producers do.
type Put func(source app.QASource, msgs ...Message)

// Opener opens a feed over fresh sources whose batches hold at most batch
// messages, and the way to store messages on those sources.
type Opener func(t *testing.T, batch int) (app.QAFeed, Put)

// bound is the batch bound every check opens its feed with: small, so
// that a handful of messages needs several batches.
const bound = 3

const (
	ws          = "ws_a"
	invocation  = "inv_1"
	traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

var sources = []app.QASource{app.QARuns, app.QAPlatform, app.QATickets}

// message is the n-th message of a source, named by its id: a run, a
// platform event on a conversation, a ticket.
func message(source app.QASource, n int) Message {
	var (
		subject string
		err     error
	)
	m := Message{Traceparent: traceparent}
	switch source {
	case app.QARuns:
		id := fmt.Sprintf("run_%03d", n)
		subject, err = events.RunFailureSubject(ws, invocation, id)
		m.Event = &testingv1.RunCompleted{Run: &testingv1.RunResult{RunId: id, InvocationId: invocation, WorkspaceId: ws, TestId: "test_1",
			Status: events.RunStatusFailed, ConditionResult: "failure", RationaleSummary: "Quoted the wrong refund window."}}
		m.RunStatus = events.RunStatusFailed
	case app.QATickets:
		id := fmt.Sprintf("tkt_%03d", n)
		subject, err = events.TicketSubject(ws, id)
		m.Event = &ticketsv1.TicketCreated{Ticket: &ticketsv1.Ticket{TicketId: id, WorkspaceId: ws, AgentId: "agent_1", Title: "Escalated to billing", NeedsClustering: true}}
	case app.QAPlatform:
		name := app.QAPlatformEvents[n%len(app.QAPlatformEvents)]
		subject, err = events.PlatformSubject(ws, name)
		data, _ := json.Marshal(map[string]string{"conversation_id": fmt.Sprintf("conv_%03d", n), "agent_id": "agent_1"})
		m.Body, _ = json.Marshal(wire.Envelope{Event: name, Timestamp: wire.FormatTimestamp(time.Now()), Data: data})
	default:
		panic("no such source " + source)
	}
	if err != nil {
		panic(err)
	}
	m.Subject = subject
	return m
}

// garbled is the n-th message of a protobuf source with a body that does
// not decode: a field that claims more bytes than follow.
func garbled(source app.QASource, n int) Message {
	m := message(source, n)
	m.Body = []byte("\x0a\x40too short")
	return m
}

// clustered is the n-th ticket, which needs no clustering.
func clustered(n int) Message {
	m := message(app.QATickets, n)
	m.Event.(*ticketsv1.TicketCreated).Ticket.NeedsClustering = false
	return m
}

// passed is the n-th run, which passed: its producer says so beside it.
func passed(n int) Message {
	m := message(app.QARuns, n)
	run := m.Event.(*testingv1.RunCompleted).GetRun()
	run.Status, run.ConditionResult, run.RationaleSummary = events.RunStatusPassed, "success", ""
	m.RunStatus = events.RunStatusPassed
	return m
}

func messages(source app.QASource, from, to int) []Message {
	var out []Message
	for n := from; n <= to; n++ {
		out = append(out, message(source, n))
	}
	return out
}

// idOf names a fed message as message named it: the run or ticket id
// ends its subject; a platform event's conversation is in its body.
func idOf(m app.QAMessage) string {
	if strings.HasPrefix(m.Subject, events.PlatformSubjectPrefix+".") {
		var env wire.Envelope
		var data struct {
			ConversationID string `json:"conversation_id"`
		}
		if json.Unmarshal(m.Data, &env) != nil || json.Unmarshal(env.Data, &data) != nil {
			return "undecodable platform event on " + m.Subject
		}
		return data.ConversationID
	}
	return m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
}

func idsOf(ms []app.QAMessage) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, idOf(m))
	}
	return out
}

// sentID names a stored message as idOf names it once fed.
func sentID(m Message) string { return idOf(app.QAMessage{Subject: m.Subject, Data: m.Body}) }

func sentIDs(source app.QASource, from, to int) []string {
	out := []string{}
	for _, m := range messages(source, from, to) {
		out = append(out, sentID(m))
	}
	return out
}

// fed is what a handler was fed, batch by batch, and whether it failed
// each.
type fed struct {
	mu      sync.Mutex
	batches []fedBatch
}

type fedBatch struct {
	msgs   []app.QAMessage
	failed bool
}

// handler records each batch and answers what answer says (nil: every
// batch is handled).
func (f *fed) handler(answer func(ctx context.Context, batch []app.QAMessage) error) func(context.Context, []app.QAMessage) error {
	return func(ctx context.Context, batch []app.QAMessage) error {
		var err error
		if answer != nil {
			err = answer(ctx, batch)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.batches = append(f.batches, fedBatch{slices.Clone(batch), err != nil})
		return err
	}
}

func (f *fed) all() []fedBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// handled is every message of the batches handled, in the order fed.
func (f *fed) handled() []app.QAMessage {
	var out []app.QAMessage
	for _, b := range f.all() {
		if !b.failed {
			out = append(out, b.msgs...)
		}
	}
	return out
}

func (f *fed) failures() int {
	n := 0
	for _, b := range f.all() {
		if b.failed {
			n++
		}
	}
	return n
}

// follow runs feed.Follow on source until the returned stop is called
// (or the test ends); stop checks that Follow returned nil soon after.
func follow(t *testing.T, feed app.QAFeed, source app.QASource, h func(context.Context, []app.QAMessage) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- feed.Follow(ctx, source, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Follow(%s) returned %v once its context ended; want nil", source, err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Follow(%s) did not return within 10s of its context ending", source)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually waits for what the feed does a moment later; the bound is
// generous for a redelivery's back-off on a loaded machine.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, what, ok)
}

// checkBatches fails unless every batch holds 1 to bound messages in
// stream order.
func checkBatches(t *testing.T, batches []fedBatch) {
	t.Helper()
	for i, b := range batches {
		if len(b.msgs) == 0 || len(b.msgs) > bound {
			t.Errorf("batch %d holds %d messages; want 1 to %d", i, len(b.msgs), bound)
		}
		for j := 1; j < len(b.msgs); j++ {
			if b.msgs[j].Seq <= b.msgs[j-1].Seq {
				t.Errorf("batch %d out of stream order: seq %d after %d", i, b.msgs[j].Seq, b.msgs[j-1].Seq)
			}
		}
	}
}

// checkMessage fails unless got is sent as the QA worker reads it.
func checkMessage(t *testing.T, source app.QASource, got app.QAMessage, sent Message, decodable bool) {
	t.Helper()
	id := idOf(got)
	if got.Subject != sent.Subject || got.Traceparent != sent.Traceparent {
		t.Errorf("%s: subject %q traceparent %q; want %q, %q", id, got.Subject, got.Traceparent, sent.Subject, sent.Traceparent)
	}
	if got.Seq == 0 || got.Stored.IsZero() {
		t.Errorf("%s: seq %d stored %v; want both set", id, got.Seq, got.Stored)
	}
	if got.RunStatus != sent.RunStatus {
		t.Errorf("%s: run status %q; want %q", id, got.RunStatus, sent.RunStatus)
	}
	switch {
	case source == app.QAPlatform:
		if string(got.Data) != string(sent.Body) || got.Event != nil || got.Err != nil {
			t.Errorf("%s: data %q event %v err %v; want the body as stored, no event, no error", id, got.Data, got.Event, got.Err)
		}
	case decodable:
		if got.Err != nil || !proto.Equal(got.Event, sent.Event) {
			t.Errorf("%s: event %v err %v; want %v decoded", id, got.Event, got.Err, sent.Event)
		}
	default:
		if got.Err == nil || got.Event != nil {
			t.Errorf("%s: event %v err %v; want no event and the error decoding it", id, got.Event, got.Err)
		}
	}
}

// Run checks open against what app.QAFeed promises. It does not ask for
// what JetStream does not give: the order of messages fed again after a
// failure or a stop (the server need not take give-backs in the order
// they were sent), the same grouping of a failed
// batch when fed again, or another replica's progress while one holds a
// batch (a durable consumer hands a replica up to its max-ack-pending
// ahead of its handler).
func Run(t *testing.T, open Opener) {
	t.Run("each source is fed in stream order, in bounded batches, each message once", func(t *testing.T) {
		for _, source := range sources {
			t.Run(string(source), func(t *testing.T) {
				feed, put := open(t, bound)
				sent := messages(source, 1, 12)
				put(source, sent[:4]...) // stored before the feed follows...
				var f fed
				follow(t, feed, source, f.handler(nil))
				put(source, sent[4:7]...) // ...and while it does
				put(source, sent[7:11]...)
				eventually(t, "11 messages handled", func() bool { return len(f.handled()) >= 11 })
				// Whatever would be fed twice comes before a last message.
				put(source, sent[11])
				eventually(t, "the last message handled", func() bool { return slices.Contains(idsOf(f.handled()), sentID(sent[11])) })

				handled := f.handled()
				if got, want := idsOf(handled), sentIDs(source, 1, 12); !slices.Equal(got, want) {
					t.Fatalf("handled %v; want %v, each once", got, want)
				}
				checkBatches(t, f.all())
				for i, m := range handled {
					checkMessage(t, source, m, sent[i], true)
					if i > 0 && m.Seq <= handled[i-1].Seq {
						t.Errorf("%s: seq %d after %d", idOf(m), m.Seq, handled[i-1].Seq)
					}
				}
			})
		}
	})

	t.Run("a body that cannot be decoded is fed in its place with the error", func(t *testing.T) {
		for _, source := range []app.QASource{app.QARuns, app.QATickets} {
			t.Run(string(source), func(t *testing.T) {
				feed, put := open(t, bound)
				sent := []Message{message(source, 1), garbled(source, 2), message(source, 3)}
				put(source, sent...)
				var f fed
				follow(t, feed, source, f.handler(nil))
				eventually(t, "3 messages handled", func() bool { return len(f.handled()) >= 3 })
				handled := f.handled()
				if got, want := idsOf(handled), sentIDs(source, 1, 3); !slices.Equal(got, want) {
					t.Fatalf("handled %v; want %v", got, want)
				}
				for i, m := range handled {
					checkMessage(t, source, m, sent[i], i != 1)
				}
				if handled[1].Seq <= handled[0].Seq || handled[2].Seq <= handled[1].Seq {
					t.Errorf("seqs %d %d %d; want increasing", handled[0].Seq, handled[1].Seq, handled[2].Seq)
				}
			})
		}
	})

	// A run stated passed, a ticket that needs no clustering: nothing the
	// worker acts on, so the feed does not decode it.
	t.Run("a message the worker passes by is fed in its place, undecoded", func(t *testing.T) {
		for _, c := range []struct {
			source  app.QASource
			skipped Message
		}{{app.QARuns, passed(2)}, {app.QATickets, clustered(2)}} {
			t.Run(string(c.source), func(t *testing.T) {
				feed, put := open(t, bound)
				sent := []Message{message(c.source, 1), c.skipped, message(c.source, 3)}
				put(c.source, sent...)
				var f fed
				follow(t, feed, c.source, f.handler(nil))
				eventually(t, "3 messages handled", func() bool { return len(f.handled()) >= 3 })
				handled := f.handled()
				if got, want := idsOf(handled), sentIDs(c.source, 1, 3); !slices.Equal(got, want) {
					t.Fatalf("handled %v; want %v", got, want)
				}
				checkMessage(t, c.source, handled[0], sent[0], true)
				checkMessage(t, c.source, handled[2], sent[2], true)
				if m := handled[1]; m.RunStatus != c.skipped.RunStatus || m.Event != nil || m.Err != nil || m.Seq <= handled[0].Seq {
					t.Errorf("%s: status %q event %v err %v seq %d; want %q, undecoded, after seq %d",
						idOf(m), m.RunStatus, m.Event, m.Err, m.Seq, c.skipped.RunStatus, handled[0].Seq)
				}
			})
		}
	})

	t.Run("a failed batch is fed again later, the same messages, until handled", func(t *testing.T) {
		feed, put := open(t, bound)
		source := app.QARuns
		put(source, messages(source, 1, 7)...)
		var f fed
		var failuresLeft atomic.Int32
		failuresLeft.Store(2)
		follow(t, feed, source, f.handler(func(context.Context, []app.QAMessage) error {
			if failuresLeft.Add(-1) >= 0 {
				return errors.New("the tickets stream is out of reach")
			}
			return nil
		}))
		eventually(t, "7 messages handled", func() bool { return len(f.handled()) >= 7 })
		put(source, message(source, 8))
		eventually(t, "a last message handled", func() bool { return len(f.handled()) >= 8 })

		batches := f.all()
		checkBatches(t, batches)
		handled := f.handled()
		got := idsOf(handled)
		slices.Sort(got)
		if want := sentIDs(source, 1, 8); !slices.Equal(got, want) {
			t.Fatalf("handled %v; want %v, each once", got, want)
		}
		for i, b := range batches {
			if !b.failed {
				continue
			}
			// Each message of a failed batch comes again, unchanged, in a
			// later batch.
			for _, m := range b.msgs {
				again := false
				for _, later := range batches[i+1:] {
					for _, l := range later.msgs {
						again = again || (l.Seq == m.Seq && idOf(l) == idOf(m) && proto.Equal(l.Event, m.Event))
					}
				}
				if !again {
					t.Errorf("%s (seq %d) of failed batch %d was not fed again", idOf(m), m.Seq, i)
				}
			}
		}
		if n := f.failures(); n != 2 {
			t.Errorf("%d batches failed; want the 2 the handler failed", n)
		}
	})

	t.Run("Follow returns nil when its context ends", func(t *testing.T) {
		t.Run("while waiting for messages", func(t *testing.T) {
			feed, put := open(t, bound)
			var f fed
			stop := follow(t, feed, app.QAPlatform, f.handler(nil))
			put(app.QAPlatform, message(app.QAPlatform, 1))
			eventually(t, "the message handled", func() bool { return len(f.handled()) == 1 })
			stop()
		})
		t.Run("after a failed batch", func(t *testing.T) {
			feed, put := open(t, bound)
			var f fed
			stop := follow(t, feed, app.QARuns, f.handler(func(context.Context, []app.QAMessage) error { return errors.New("always failing") }))
			put(app.QARuns, message(app.QARuns, 1))
			eventually(t, "a batch failed", func() bool { return f.failures() >= 1 })
			stop()
		})
		t.Run("while the handler holds a batch: the next Follow is fed what the first did not handle", func(t *testing.T) {
			feed, put := open(t, bound)
			const total = 2 * bound // at least two batches
			put(app.QATickets, messages(app.QATickets, 1, total)...)
			var stopped fed
			var batches atomic.Int32
			holding := make(chan struct{})
			stop := follow(t, feed, app.QATickets, stopped.handler(func(ctx context.Context, _ []app.QAMessage) error {
				switch batches.Add(1) {
				case 1:
					return nil // the first batch is handled...
				case 2:
					close(holding)
				}
				<-ctx.Done() // ...and the replica is stopped in the second
				return ctx.Err()
			}))
			select {
			case <-holding:
			case <-time.After(20 * time.Second):
				t.Fatal("no second batch fed within 20s")
			}
			stop()
			done := idsOf(stopped.handled())
			var want []string
			for _, id := range sentIDs(app.QATickets, 1, total) {
				if !slices.Contains(done, id) {
					want = append(want, id)
				}
			}
			var next fed
			follow(t, feed, app.QATickets, next.handler(nil))
			eventually(t, "the next Follow handles the rest", func() bool { return len(next.handled()) >= len(want) })
			got := idsOf(next.handled())
			slices.Sort(got) // given back, they may come in any order
			if len(done) == 0 || !slices.Equal(got, want) {
				t.Fatalf("the stopped Follow handled %v, the next %v; want the next to handle %v, once each", done, got, want)
			}
		})
	})

	t.Run("sources are independent: one failing or holding a batch does not hold another back", func(t *testing.T) {
		feed, put := open(t, bound)
		var runs, tickets, platform fed
		follow(t, feed, app.QARuns, runs.handler(func(context.Context, []app.QAMessage) error { return errors.New("always failing") }))
		follow(t, feed, app.QATickets, tickets.handler(func(ctx context.Context, _ []app.QAMessage) error {
			<-ctx.Done()
			return ctx.Err()
		}))
		follow(t, feed, app.QAPlatform, platform.handler(nil))
		put(app.QARuns, messages(app.QARuns, 1, 5)...)
		put(app.QATickets, messages(app.QATickets, 1, 5)...)
		put(app.QAPlatform, messages(app.QAPlatform, 1, 5)...)
		eventually(t, "the platform messages handled", func() bool { return len(platform.handled()) >= 5 })
		if got, want := idsOf(platform.handled()), sentIDs(app.QAPlatform, 1, 5); !slices.Equal(got, want) {
			t.Fatalf("platform handled %v; want %v", got, want)
		}
		eventually(t, "a runs batch failed", func() bool { return runs.failures() >= 1 })
	})

	t.Run("two Follow calls on one source share it: each message handled by one of them", func(t *testing.T) {
		feed, put := open(t, bound)
		source := app.QARuns
		const rounds = 60
		const total = rounds * bound
		var first, second fed
		handled := func() int { return len(first.handled()) + len(second.handled()) }
		follow(t, feed, source, first.handler(nil))
		follow(t, feed, source, second.handler(nil))
		// Each round's messages are stored while both wait, so both go for
		// them at once.
		for round := range rounds {
			put(source, messages(source, round*bound+1, (round+1)*bound)...)
			eventually(t, fmt.Sprintf("round %d handled", round), func() bool { return handled() >= (round+1)*bound })
		}
		put(source, message(source, total+1))
		eventually(t, "a last message handled", func() bool { return handled() >= total+1 })

		got := append(idsOf(first.handled()), idsOf(second.handled())...)
		slices.Sort(got)
		if want := sentIDs(source, 1, total+1); !slices.Equal(got, want) {
			t.Fatalf("handled %v; want %v, each by one replica once", got, want)
		}
		for name, replica := range map[string]*fed{"first": &first, "second": &second} {
			checkBatches(t, replica.all())
			handled := replica.handled()
			for i := 1; i < len(handled); i++ {
				if handled[i].Seq <= handled[i-1].Seq {
					t.Errorf("the %s replica was fed seq %d after %d", name, handled[i].Seq, handled[i-1].Seq)
				}
			}
		}
	})
}
