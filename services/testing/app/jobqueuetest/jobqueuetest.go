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

// wantJobs fails t unless inv has want jobs on the queue.
func wantJobs(t *testing.T, count func(string) int, inv string, want int, when string) {
	t.Helper()
	if n := count(jobsOf(t, inv)); n != want {
		t.Fatalf("%s: %s has %d jobs; want %d", when, inv, n, want)
	}
}

// wantWaiting fails t unless Waiting says want of inv.
func wantWaiting(t *testing.T, q app.JobQueue, inv string, want bool, when string) {
	t.Helper()
	if w, err := q.Waiting(context.Background(), jobsOf(t, inv)); err != nil || w != want {
		t.Fatalf("%s: %s waiting %v, %v; want %v", when, inv, w, err, want)
	}
}

func idempotent(t *testing.T, q app.JobQueue, count func(string) int) {
	enqueue(t, q, "tinv_a", "run", 3)
	enqueue(t, q, "tinv_a", "run", 3) // a retried enqueue
	wantJobs(t, count, "tinv_a", 3, "after a retried enqueue")
	enqueue(t, q, "tinv_a", "again", 1)
	wantJobs(t, count, "tinv_a", 4, "after a new id")
}

func waiting(t *testing.T, q app.JobQueue, _ func(string) int) {
	wantWaiting(t, q, "tinv_a", false, "an empty queue")
	enqueue(t, q, "tinv_a", "run", 2)
	wantWaiting(t, q, "tinv_a", true, "queued")
	wantWaiting(t, q, "tinv_b", false, "another invocation queued")
}

func purge(t *testing.T, q app.JobQueue, count func(string) int) {
	enqueue(t, q, "tinv_a", "run", 3)
	enqueue(t, q, "tinv_b", "run", 2)
	if err := q.Purge(context.Background(), jobsOf(t, "tinv_a")); err != nil {
		t.Fatal(err)
	}
	wantWaiting(t, q, "tinv_a", false, "purged")
	wantJobs(t, count, "tinv_b", 2, "another invocation purged")
	// A job re-queued after the purge (an enqueuer's retry) stays dropped.
	enqueue(t, q, "tinv_a", "run", 3)
	wantJobs(t, count, "tinv_a", 0, "re-queued after its purge")
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
