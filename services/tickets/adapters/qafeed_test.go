package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/qafeedtest"
)

// The feed on JetStream passes the suite the memory one passes: messages
// are stored as their producers store them, protobuf events appended
// through the event store, platform envelopes published as they are.
// The feed runs as the service runs it (a minute's AckWait): a batch a
// stopped Follow held comes back to the next one because it is given
// back, not because it timed out.
func TestQAFeedConforms(t *testing.T) {
	qafeedtest.Run(t, func(t *testing.T, batch int) (app.QAFeed, qafeedtest.Put) {
		js := testenv.StreamsAt(t, func(ctx context.Context, js jetstream.JetStream, replicas int) error {
			return eventstore.EnsureEventStreams(ctx, js, replicas, events.TestRunsStream, events.TicketsStream, events.PlatformStream)
		})
		return QAFeed{JS: js, Batch: batch}, func(source app.QASource, msgs ...qafeedtest.Message) {
			t.Helper()
			for _, m := range msgs {
				storeQAMessage(t, js, source, m)
			}
		}
	})
}

// storeQAMessage stores m on the source's stream as its producer does.
func storeQAMessage(t *testing.T, js jetstream.JetStream, source app.QASource, m qafeedtest.Message) {
	t.Helper()
	src, ok := qaSourceOf(source)
	if !ok {
		t.Fatalf("no source %q", source)
	}
	ctx := tracing.WithRequestTrace(context.Background(), m.Traceparent)
	if !src.protobuf {
		msg := nats.NewMsg(m.Subject)
		msg.Header.Set(events.HeaderTraceparent, m.Traceparent)
		msg.Data = m.Body
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		return
	}
	e := qafeedtest.Encoded(t, m)
	if m.RunStatus != "" {
		if e.Header == nil {
			e.Header = eventlog.Header{}
		}
		e.Header.Set(events.HeaderRunStatus, m.RunStatus)
	}
	if _, err := eventstore.New(js, src.stream).Append(ctx, m.Subject, eventlog.AnySeq, "", e); err != nil {
		t.Fatal(err)
	}
}

// Of the platform's events, the QA worker is fed only those that can
// raise a ticket (app.QAPlatformEvents); the others are never pulled.
func TestQAFeedReadsOnlyThePlatformEventsThatRaiseTickets(t *testing.T) {
	js := testenv.StreamsAt(t, func(ctx context.Context, js jetstream.JetStream, replicas int) error {
		return eventstore.EnsureEventStreams(ctx, js, replicas, events.PlatformStream)
	})
	store := func(name string) {
		subject, err := events.PlatformSubject("ws_a", name)
		if err != nil {
			t.Fatal(err)
		}
		storeQAMessage(t, js, app.QAPlatform, qafeedtest.Message{Subject: subject, Body: []byte(`{"event":"` + name + `"}`)})
	}
	for _, name := range []string{"call_started", "conversation_ended", "agent_response", "escalation_triggered", "call_ended"} {
		store(name)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fed := make(chan string, 10)
	go func() {
		_ = QAFeed{JS: js}.Follow(ctx, app.QAPlatform, func(_ context.Context, batch []app.QAMessage) error {
			for _, m := range batch {
				fed <- m.Subject
			}
			return nil
		})
	}()
	next := func() string {
		select {
		case s := <-fed:
			return s[strings.LastIndexByte(s, '.')+1:]
		case <-time.After(10 * time.Second):
			t.Fatal("nothing more fed within 10s")
			return ""
		}
	}
	// A wanted event stored last shows nothing unwanted was fed in between.
	got := []string{next(), next()}
	store("conversation_ended")
	if got = append(got, next()); !slices.Equal(got, []string{"conversation_ended", "escalation_triggered", "conversation_ended"}) {
		t.Fatalf("fed %v; want conversation_ended, escalation_triggered, conversation_ended", got)
	}
}

// A deployment upgraded from the durable that read every run's result
// (replacedRunsDurable): what it still held is fed first (its failed runs
// decoded, its passed ones not), then the failure notices, and the
// retired durable is deleted once drained.
func TestTheRetiredRunsDurableIsDrainedThenDeleted(t *testing.T) {
	js := testenv.StreamsAt(t, func(ctx context.Context, js jetstream.JetStream, replicas int) error {
		return eventstore.EnsureEventStreams(ctx, js, replicas, events.TestRunsStream)
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := js.CreateOrUpdateConsumer(ctx, events.TestRunsStream, jetstream.ConsumerConfig{Durable: replacedRunsDurable,
		FilterSubjects: []string{"testruns.evt.>"}, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	run := func(subjectOf func(string, string, string) (string, error), id, status string) {
		subject, err := subjectOf("ws_a", "inv_1", id)
		if err != nil {
			t.Fatal(err)
		}
		storeQAMessage(t, js, app.QARuns, qafeedtest.Message{Subject: subject, RunStatus: status,
			Event: &testingv1.RunCompleted{Run: &testingv1.RunResult{RunId: id, WorkspaceId: "ws_a", InvocationId: "inv_1", Status: status}}})
	}
	// Stored before the upgrade: results alone.
	run(events.RunSubject, "run_1", events.RunStatusFailed)
	run(events.RunSubject, "run_2", events.RunStatusPassed)
	// Stored after it: a result and its notice.
	run(events.RunSubject, "run_3", events.RunStatusFailed)
	run(events.RunFailureSubject, "run_3", events.RunStatusFailed)
	fed := make(chan app.QAMessage, 10)
	go func() {
		_ = QAFeed{JS: js}.Follow(ctx, app.QARuns, func(_ context.Context, batch []app.QAMessage) error {
			for _, m := range batch {
				fed <- m
			}
			return nil
		})
	}()
	var got []string
	for len(got) < 4 {
		select {
		case m := <-fed:
			decoded := m.Event != nil
			got = append(got, fmt.Sprintf("%s decoded=%v", m.Subject, decoded))
		case <-time.After(10 * time.Second):
			t.Fatalf("fed %v, then nothing within 10s", got)
		}
	}
	want := []string{"testruns.evt.ws_a.inv_1.run_1 decoded=true", "testruns.evt.ws_a.inv_1.run_2 decoded=false",
		"testruns.evt.ws_a.inv_1.run_3 decoded=true", "testruns.fail.ws_a.inv_1.run_3 decoded=true"}
	if !slices.Equal(got, want) {
		t.Fatalf("fed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := js.Consumer(ctx, events.TestRunsStream, replacedRunsDurable); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the retired durable: %v; want it deleted", err)
	}
	// Later results are read from the notices alone.
	run(events.RunSubject, "run_4", events.RunStatusFailed)
	run(events.RunFailureSubject, "run_4", events.RunStatusFailed)
	select {
	case m := <-fed:
		if m.Subject != "testruns.fail.ws_a.inv_1.run_4" {
			t.Fatalf("fed %s; want run_4's notice", m.Subject)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run_4's notice not fed within 10s")
	}
}
