// Package queuetest is the conformance suite of app.Queue: every
// implementation (JetStream, memory) stores each event id and each
// delivery job id once, keeps them in the order published, refuses what
// would not make a subject, and brings a deferred job back once, with
// what became of it.
package queuetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// Stored is what a queue holds, oldest first.
type Stored struct {
	Events []app.PlatformEvent
	Jobs   []app.Queued
}

// Opener opens a queue over fresh storage, and a reader of what it
// stored (every event and job published so far, once each).
type Opener func(t *testing.T) (q app.Queue, stored func() Stored)

func event(id, ws, name string) app.PlatformEvent {
	return app.PlatformEvent{ID: id, WorkspaceID: ws, Event: name, Body: []byte(`{"event":"` + name + `","id":"` + id + `"}`)}
}

// Two traces, as W3C traceparents.
const (
	trace1 = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	trace2 = "00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01"
)

func job(eventID, webhookID, resendID string) *webhooksv1.DeliveryJob {
	return &webhooksv1.DeliveryJob{EventId: eventID, WorkspaceId: "ws_a", WebhookId: webhookID, Event: "ticket_created", Body: []byte(`{}`), ResendId: resendID}
}

// Run checks open against what app.Queue promises.
func Run(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("events: once per id, in order, body kept", func(t *testing.T) {
		q, stored := open(t)
		for _, e := range []app.PlatformEvent{event("evt_1", "ws_a", "call_ended"), event("evt_2", "ws_b", "call_ended"), event("evt_1", "ws_a", "call_ended"), event("evt_3", "ws_a", "ticket_created")} {
			if err := q.PublishEvent(ctx, e); err != nil {
				t.Fatalf("publish %s: %v", e.ID, err)
			}
		}
		got := stored().Events
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID+"/"+e.WorkspaceID+"/"+e.Event)
		}
		if want := []string{"evt_1/ws_a/call_ended", "evt_2/ws_b/call_ended", "evt_3/ws_a/ticket_created"}; !slices.Equal(ids, want) {
			t.Fatalf("stored %v, want %v", ids, want)
		}
		if string(got[2].Body) != string(event("evt_3", "ws_a", "ticket_created").Body) {
			t.Fatalf("body: %s", got[2].Body)
		}
	})

	t.Run("events: an id stored again with another request's digest is refused", func(t *testing.T) {
		q, stored := open(t)
		first := event("evt_k", "ws_a", "call_ended")
		first.Digest = "digest-of-the-first-request"
		if err := q.PublishEvent(ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := q.PublishEvent(ctx, first); err != nil {
			t.Fatalf("the same request again: %v", err)
		}
		other := event("evt_k", "ws_a", "call_started")
		other.Digest = "digest-of-another-request"
		var v apperr.ValidationErrors
		if err := q.PublishEvent(ctx, other); !errors.As(err, &v) || v[0].Type != apperr.IdempotencyKeyReused[0].Type {
			t.Fatalf("the key with another event: %v, want IdempotencyKeyReused", err)
		}
		if got := stored().Events; len(got) != 1 || got[0].Event != "call_ended" {
			t.Fatalf("stored %+v, want the first event only", got)
		}
	})

	t.Run("events: a name that makes no subject is refused", func(t *testing.T) {
		q, stored := open(t)
		if err := q.PublishEvent(ctx, event("evt_1", "ws_a", "call.ended")); err == nil {
			t.Fatal("a dotted event name was accepted")
		}
		if n := len(stored().Events); n != 0 {
			t.Fatalf("%d stored", n)
		}
	})

	t.Run("jobs: once per event, webhook and resend", func(t *testing.T) {
		q, stored := open(t)
		for _, j := range []*webhooksv1.DeliveryJob{
			job("evt_1", "whk_1", "rsd_1"), job("evt_1", "whk_1", "rsd_1"), // a retried resend
			job("evt_1", "whk_1", "rsd_2"), // another resend of it
			job("evt_1", "whk_2", "rsd_1"), // the same resend id, another webhook
			job("evt_2", "whk_1", "rsd_1"),
		} {
			if err := q.QueueDelivery(ctx, app.Queued{Job: j}); err != nil {
				t.Fatal(err)
			}
		}
		var ids []string
		for _, j := range stored().Jobs {
			ids = append(ids, j.Job.GetEventId()+":"+j.Job.GetWebhookId()+":"+j.Job.GetResendId())
		}
		if want := []string{"evt_1:whk_1:rsd_1", "evt_1:whk_1:rsd_2", "evt_1:whk_2:rsd_1", "evt_2:whk_1:rsd_1"}; !slices.Equal(ids, want) {
			t.Fatalf("queued %v, want %v", ids, want)
		}
	})

	t.Run("jobs: several at once, in order, each once, each with its trace", func(t *testing.T) {
		q, stored := open(t)
		traced := func(eventID, webhookID, traceparent string) app.Queued {
			return app.Queued{Job: job(eventID, webhookID, ""), Traceparent: traceparent}
		}
		// A fan-out of two events, each continuing its own trace, the
		// second delivered again: nothing is queued twice.
		if err := q.QueueDelivery(ctx, traced("evt_1", "whk_2", trace1), traced("evt_1", "whk_1", trace1), traced("evt_2", "whk_1", trace2), traced("evt_1", "whk_2", trace1)); err != nil {
			t.Fatal(err)
		}
		if err := q.QueueDelivery(ctx, traced("evt_2", "whk_1", trace2), traced("evt_2", "whk_3", "")); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range stored().Jobs {
			got = append(got, j.Job.GetEventId()+":"+j.Job.GetWebhookId()+" "+j.Traceparent)
		}
		want := []string{"evt_1:whk_2 " + trace1, "evt_1:whk_1 " + trace1, "evt_2:whk_1 " + trace2, "evt_2:whk_3 "}
		if !slices.Equal(got, want) {
			t.Fatalf("queued %q, want %q", got, want)
		}
	})

	t.Run("a deferred job comes back once, when its time has come, with what became of it", func(t *testing.T) {
		q, stored := open(t)
		first := job("evt_1", "whk_1", "")
		if err := q.QueueDelivery(ctx, app.Queued{Job: first, Traceparent: trace1}); err != nil {
			t.Fatal(err)
		}
		back := app.Deferral{Queued: app.Queued{Job: first, Traceparent: trace1, AttemptsMade: 2, Deferrals: 1}, At: time.Now(), Key: "evt_1:whk_1@1"}
		// Deferred twice under one key (a replica that died before settling
		// the copy it deferred): one copy comes back.
		for range 2 {
			if err := q.Defer(ctx, back); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Defer(ctx, app.Deferral{Queued: app.Queued{Job: job("evt_1", "whk.x", "")}, At: time.Now(), Key: "k"}); err == nil {
			t.Fatal("a job that makes no subject was deferred")
		}
		var jobs []app.Queued
		testkit.Eventually(t, 10*time.Second, "the deferred job back in the queue", func() bool {
			jobs = stored().Jobs
			return len(jobs) >= 2
		})
		if len(jobs) != 2 {
			t.Fatalf("queued %d jobs, want the first and its deferred copy", len(jobs))
		}
		got := jobs[1]
		if app.JobID(got.Job) != app.JobID(first) || got.Traceparent != trace1 || got.AttemptsMade != 2 || got.Deferrals != 1 || string(got.Job.GetBody()) != "{}" {
			t.Fatalf("came back as %+v", got)
		}
		if jobs[0].AttemptsMade != 0 || jobs[0].Deferrals != 0 {
			t.Fatalf("a job fanned out says %+v", jobs[0])
		}
	})
}
