// Package backlogtest is the conformance suite of app.Backlog: every
// implementation (the WEBHOOK_DELIVERIES stream, memory) counts, per
// webhook of a workspace, the delivery jobs queued and not delivered
// yet (those waiting for their workspace's turn too), each job once, and
// never another workspace's; and every job queued, of every workspace.
package backlogtest

import (
	"context"
	"maps"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// Opener opens a backlog and the queue it counts over fresh storage, and
// deliver, which takes a queued job out as the dispatcher does once it
// delivered it or gave it up.
type Opener func(t *testing.T) (b app.Backlog, q app.Queue, deliver func(*webhooksv1.DeliveryJob))

func job(ws, webhookID, eventID string) *webhooksv1.DeliveryJob {
	return &webhooksv1.DeliveryJob{EventId: eventID, WorkspaceId: ws, WebhookId: webhookID, Event: "ticket_created", Body: []byte(`{}`)}
}

// Run checks open against what app.Backlog promises.
func Run(t *testing.T, open Opener) {
	ctx := context.Background()
	want := func(t *testing.T, b app.Backlog, ws string, expect map[string]uint64) {
		t.Helper()
		got, err := b.Waiting(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, expect) {
			t.Fatalf("waiting in %s: %v, want %v", ws, got, expect)
		}
	}
	queue := func(t *testing.T, q app.Queue, jobs ...*webhooksv1.DeliveryJob) {
		t.Helper()
		for _, j := range jobs {
			if err := q.QueueDelivery(ctx, app.Queued{Job: j}); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("per webhook of the workspace, each job once", func(t *testing.T) {
		b, q, _ := open(t)
		want(t, b, "ws_a", map[string]uint64{})
		queue(t, q, job("ws_a", "whk_1", "evt_1"), job("ws_a", "whk_1", "evt_2"), job("ws_a", "whk_2", "evt_1"),
			job("ws_a", "whk_1", "evt_1"), // queued again: the same job
			job("ws_b", "whk_9", "evt_1"))
		resend := job("ws_a", "whk_1", "evt_1")
		resend.ResendId = "rsd_1" // a resend of a delivered event is another job
		queue(t, q, resend)
		want(t, b, "ws_a", map[string]uint64{"whk_1": 3, "whk_2": 1})
		want(t, b, "ws_b", map[string]uint64{"whk_9": 1})
		want(t, b, "ws_c", map[string]uint64{})
	})

	t.Run("a delivered job leaves it", func(t *testing.T) {
		b, q, deliver := open(t)
		first, second := job("ws_a", "whk_1", "evt_1"), job("ws_a", "whk_1", "evt_2")
		queue(t, q, first, second, job("ws_a", "whk_2", "evt_1"))
		deliver(first)
		want(t, b, "ws_a", map[string]uint64{"whk_1": 1, "whk_2": 1})
		deliver(second)
		want(t, b, "ws_a", map[string]uint64{"whk_2": 1})
	})

	t.Run("a workspace id that is a pattern counts no other workspace", func(t *testing.T) {
		b, q, _ := open(t)
		queue(t, q, job("ws_a", "whk_1", "evt_1"), job("ws_b", "whk_2", "evt_1"))
		for _, ws := range []string{"*", ">", "ws_a.*", ""} {
			got, err := b.Waiting(ctx, ws)
			if err == nil && len(got) != 0 {
				t.Fatalf("waiting in %q: %v", ws, got)
			}
		}
	})

	t.Run("a job waiting for its workspace's turn counts; Queued counts every workspace", func(t *testing.T) {
		b, q, deliver := open(t)
		taken, other := job("ws_a", "whk_1", "evt_1"), job("ws_b", "whk_9", "evt_1")
		queue(t, q, taken, job("ws_a", "whk_2", "evt_1"), other)
		// Put back for an hour: the copy taken leaves, its deferral waits.
		if err := q.Defer(ctx, app.Deferral{Queued: app.Queued{Job: taken, AttemptsMade: 1, Deferrals: 1}, At: time.Now().Add(time.Hour), Key: "evt_1:whk_1@1"}); err != nil {
			t.Fatal(err)
		}
		deliver(taken)
		want(t, b, "ws_a", map[string]uint64{"whk_1": 1, "whk_2": 1})
		n, err := b.Queued(ctx)
		if err != nil || n != 3 {
			t.Fatalf("queued: %d %v, want 3", n, err)
		}
		deliver(other)
		if n, err := b.Queued(ctx); err != nil || n != 2 {
			t.Fatalf("queued after a delivery: %d %v, want 2", n, err)
		}
	})
}
