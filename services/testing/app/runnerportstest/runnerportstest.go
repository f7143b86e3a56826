// Package runnerportstest is the one conformance suite of a runner's
// ports (app.RunnerPorts): every implementation (JetStream, memory)
// runs it.
package runnerportstest

import (
	"context"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Ports are a runner's ports and the app ports they share a store with:
// the job queue enqueuers fill, the runs log and counters the app reads.
type Ports struct {
	Runner app.RunnerPorts
	Jobs   app.JobQueue
	Runs   app.RunsLog
	Counts app.Counters
}

// Open returns fresh, empty ports.
type Open func(t *testing.T) Ports

// Run runs every case on fresh ports from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		run  func(*testing.T, Ports)
	}{
		{"TakesUpToNOfAnInvocationsJobs", takes},
		{"ARetriedJobIsDeliveredAgain", retried},
		{"DoneAndDroppedJobsLeaveTheQueue", ended},
		{"EnqueuingNotifiesRunners", notifies},
		{"AResultIsStoredOncePerID", storesOnce},
		{"IncrAddsToACounter", incr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

// enqueue queues n jobs of inv, data "<inv>/<i>".
func enqueue(t *testing.T, p Ports, inv string, n int) {
	t.Helper()
	err := p.Jobs.Enqueue(context.Background(), n, func(i int) (app.Message, error) {
		id := inv + "/" + string(rune('a'+i))
		s, err := events.TestJobSubject("ws", inv, "run"+string(rune('a'+i)))
		return app.Message{Subject: s, ID: id, Data: []byte(id)}, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// take takes up to n of inv's jobs, listing the queues again until some
// come (a job given back may take a moment).
func take(t *testing.T, p Ports, inv string, n int) []app.TakenJob {
	t.Helper()
	ctx := context.Background()
	var got []app.TakenJob
	testkit.Eventually(t, 5*time.Second, "jobs of "+inv+" to take", func() bool {
		if err := p.Runner.Queues.Refresh(ctx, func(string, string) int { return 0 }); err != nil {
			t.Fatal(err)
		}
		jobs, err := p.Runner.Queues.Take(ctx, app.RunQueue{Workspace: "ws", Invocation: inv, Waiting: n}, n)
		if err != nil {
			t.Fatal(err)
		}
		got = jobs
		return len(got) > 0
	})
	return got
}

func waiting(t *testing.T, p Ports, inv string) bool {
	t.Helper()
	f, _ := events.TestJobsOfInvocation("ws", inv)
	w, err := p.Jobs.Waiting(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func takes(t *testing.T, p Ports) {
	before := time.Now()
	enqueue(t, p, "tinv_a", 3)
	enqueue(t, p, "tinv_b", 1)
	// A queue's count may lag its jobs' acknowledgement by a moment (the
	// JetStream consumer learns of a stored message after its publisher
	// does): a runner's next listing has it, so this one is asked again.
	listed := map[string]int{}
	testkit.Eventually(t, 5*time.Second, "both queues listed with their jobs", func() bool {
		if err := p.Runner.Queues.Refresh(context.Background(), func(string, string) int { return 0 }); err != nil {
			t.Fatal(err)
		}
		clear(listed)
		for _, q := range p.Runner.Queues.Queues() {
			listed[q.Invocation] = q.Waiting
		}
		return listed["tinv_a"] == 3 && listed["tinv_b"] == 1
	})
	jobs := take(t, p, "tinv_a", 2)
	if len(jobs) != 2 || string(jobs[0].Data()) != "tinv_a/a" || string(jobs[1].Data()) != "tinv_a/b" || jobs[0].Delivered() != 1 {
		t.Fatalf("took %d jobs", len(jobs))
	}
	if rest := take(t, p, "tinv_a", 5); len(rest) != 1 || string(rest[0].Data()) != "tinv_a/c" {
		t.Fatalf("took %d more jobs; want the last one", len(rest))
	}
	// When it was queued, by the queue's clock (a second either side).
	if q := jobs[0].Queued(); q.Before(before.Add(-time.Second)) || q.After(time.Now().Add(time.Second)) {
		t.Fatalf("a job queued at %v reads as queued at %v", before, q)
	}
}

func retried(t *testing.T, p Ports) {
	enqueue(t, p, "tinv_a", 1)
	jobs := take(t, p, "tinv_a", 1)
	if len(jobs) != 1 {
		t.Fatal("no job")
	}
	if err := jobs[0].Retry(0); err != nil {
		t.Fatal(err)
	}
	again := take(t, p, "tinv_a", 1)
	if len(again) != 1 || again[0].Delivered() != 2 || again[0].Subject() != jobs[0].Subject() {
		t.Fatalf("after a retry: %d jobs", len(again))
	}
	if !again[0].Queued().Equal(jobs[0].Queued()) {
		t.Fatalf("a job given back reads as queued at %v, first at %v", again[0].Queued(), jobs[0].Queued())
	}
}

func ended(t *testing.T, p Ports) {
	enqueue(t, p, "tinv_a", 2)
	jobs := take(t, p, "tinv_a", 2)
	if len(jobs) != 2 {
		t.Fatalf("took %d jobs", len(jobs))
	}
	if !waiting(t, p, "tinv_a") {
		t.Fatal("taken jobs not done are not waiting")
	}
	if err := jobs[0].DoneConfirmed(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := jobs[1].Drop(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the jobs gone from the queue", func() bool { return !waiting(t, p, "tinv_a") })
}

func notifies(t *testing.T, p Ports) {
	told := make(chan struct{}, 1)
	stop, err := p.Runner.Queues.Notify(func() {
		select {
		case told <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	enqueue(t, p, "tinv_a", 1)
	select {
	case <-told:
	case <-time.After(5 * time.Second):
		t.Fatal("no notice of the queued job")
	}
}

func storesOnce(t *testing.T, p Ports) {
	ctx := context.Background()
	s, _ := events.RunSubject("ws", "tinv_a", "tinv_a-r0")
	m := app.Message{Subject: s, ID: "tinv_a-r0#1", Data: []byte("result")}
	for i, want := range []bool{false, true} {
		pending, err := p.Runner.Results.Store(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if dup, err := pending.Wait(); err != nil || dup != want {
			t.Fatalf("store %d: duplicate %v, %v; want %v", i+1, dup, err, want)
		}
	}
	rec, found, err := p.Runs.Last(ctx, s)
	if err != nil || !found || string(rec.Data) != "result" {
		t.Fatalf("runs log: %q found %v, %v", rec.Data, found, err)
	}
}

func incr(t *testing.T, p Ports) {
	ctx := context.Background()
	s, _ := events.TestCountSubject("tinv_a", 1, "done")
	for _, n := range []int64{2, 3} {
		if err := p.Runner.Counts.Incr(ctx, s, n); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := p.Counts.Count(ctx, s); err != nil || got != 5 {
		t.Fatalf("count %d, %v; want 5", got, err)
	}
}
