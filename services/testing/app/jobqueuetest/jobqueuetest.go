// Package jobqueuetest is the one conformance suite of app.JobQueue:
// every implementation (JetStream, memory) runs it.
package jobqueuetest

import (
	"context"
	"errors"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Open returns an empty queue, and count, the number of jobs on it whose
// subject matches filter.
type Open func(t *testing.T) (q app.JobQueue, count func(filter string) int)

// Run runs every case on fresh queues from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		run  func(*testing.T, app.JobQueue, func(string) int)
	}{
		{"EnqueueIsIdempotentByID", idempotent},
		{"WaitingIsPerInvocation", waiting},
		{"PurgeDropsOnlyTheFilter", purge},
		{"AJobsErrorStopsEnqueue", jobError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, count := open(t)
			c.run(t, q, count)
		})
	}
}

func jobsOf(t *testing.T, inv string) string {
	t.Helper()
	f, err := events.TestJobsOfInvocation("ws", inv)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// enqueue queues n jobs of inv, ids prefix-0, prefix-1, ….
func enqueue(t *testing.T, q app.JobQueue, inv, prefix string, n int) {
	t.Helper()
	err := q.Enqueue(context.Background(), n, func(i int) (app.Message, error) {
		id := prefix + string(rune('a'+i))
		s, err := events.TestJobSubject("ws", inv, id)
		return app.Message{Subject: s, ID: inv + "/" + id, Data: []byte(id)}, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func idempotent(t *testing.T, q app.JobQueue, count func(string) int) {
	enqueue(t, q, "tinv_a", "run", 3)
	enqueue(t, q, "tinv_a", "run", 3) // a retried enqueue
	if n := count(jobsOf(t, "tinv_a")); n != 3 {
		t.Fatalf("%d jobs after a retried enqueue; want 3", n)
	}
	enqueue(t, q, "tinv_a", "again", 1)
	if n := count(jobsOf(t, "tinv_a")); n != 4 {
		t.Fatalf("%d jobs after a new id; want 4", n)
	}
}

func waiting(t *testing.T, q app.JobQueue, _ func(string) int) {
	ctx := context.Background()
	if w, err := q.Waiting(ctx, jobsOf(t, "tinv_a")); err != nil || w {
		t.Fatalf("empty queue: waiting %v, %v", w, err)
	}
	enqueue(t, q, "tinv_a", "run", 2)
	if w, err := q.Waiting(ctx, jobsOf(t, "tinv_a")); err != nil || !w {
		t.Fatalf("queued invocation: waiting %v, %v", w, err)
	}
	if w, err := q.Waiting(ctx, jobsOf(t, "tinv_b")); err != nil || w {
		t.Fatalf("another invocation: waiting %v, %v", w, err)
	}
}

func purge(t *testing.T, q app.JobQueue, count func(string) int) {
	ctx := context.Background()
	enqueue(t, q, "tinv_a", "run", 3)
	enqueue(t, q, "tinv_b", "run", 2)
	if err := q.Purge(ctx, jobsOf(t, "tinv_a")); err != nil {
		t.Fatal(err)
	}
	if w, err := q.Waiting(ctx, jobsOf(t, "tinv_a")); err != nil || w {
		t.Fatalf("purged invocation: waiting %v, %v", w, err)
	}
	if n := count(jobsOf(t, "tinv_b")); n != 2 {
		t.Fatalf("the other invocation keeps %d jobs; want 2", n)
	}
	// A job re-queued after the purge (an enqueuer's retry) stays dropped.
	enqueue(t, q, "tinv_a", "run", 3)
	if n := count(jobsOf(t, "tinv_a")); n != 0 {
		t.Fatalf("%d purged jobs queued again; want 0", n)
	}
}

func jobError(t *testing.T, q app.JobQueue, _ func(string) int) {
	boom := errors.New("boom")
	err := q.Enqueue(context.Background(), 3, func(i int) (app.Message, error) {
		if i == 1 {
			return app.Message{}, boom
		}
		s, _ := events.TestJobSubject("ws", "tinv_a", "run")
		return app.Message{Subject: s, ID: "x"}, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("enqueue: %v; want the job's error", err)
	}
}
