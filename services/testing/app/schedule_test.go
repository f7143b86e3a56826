package app_test

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// take asks s for its next queue among queues and records the jobs as
// taken (the queue's Waiting goes down), as a runner does.
func take(t *testing.T, s *app.Scheduler, queues []app.RunQueue) (app.RunQueue, int) {
	t.Helper()
	q, n, ok := s.Next(queues)
	if !ok {
		return app.RunQueue{}, 0
	}
	if n <= 0 || n > q.Waiting {
		t.Fatalf("Next offers %d jobs of a queue with %d waiting", n, q.Waiting)
	}
	for i := range queues {
		if queues[i].Workspace == q.Workspace && queues[i].Invocation == q.Invocation {
			queues[i].Waiting -= n
		}
	}
	for range n {
		s.Took(q.Workspace, q.Invocation)
	}
	return q, n
}

// takeAllPaused takes jobs from queues until the scheduler gives no more,
// every run taken pausing at once, as one waiting on a slow endpoint does.
func takeAllPaused(t *testing.T, s *app.Scheduler, queues []app.RunQueue) {
	t.Helper()
	for {
		q, n := take(t, s, queues)
		if n == 0 {
			return
		}
		for range n {
			s.Paused(q.Workspace)
		}
	}
}

// One workspace alone gets every slot, as before queues were fair; a
// second workspace arriving while it holds them finds the headroom free,
// however long the first one's runs take.
func TestSchedulerHeadroomForAnotherWorkspace(t *testing.T) {
	s := app.NewScheduler(8, 2)
	queues := []app.RunQueue{{Workspace: "ws_a", Invocation: "inv_big", Waiting: 250_000}}
	if q, n := take(t, s, queues); q.Invocation != "inv_big" || n != 8 {
		t.Fatalf("a workspace alone got %d jobs of %q, want all 8 slots", n, q.Invocation)
	}
	if _, n := take(t, s, queues); n != 0 {
		t.Fatalf("a workspace holding every slot got %d more jobs", n)
	}
	queues = append(queues, app.RunQueue{Workspace: "ws_b", Invocation: "inv_one", Waiting: 1})
	if q, n := take(t, s, queues); q.Workspace != "ws_b" || n != 1 {
		t.Fatalf("the arriving workspace got %d jobs (%+v), want its one", n, q)
	}
	if running, held := s.Load(); running != 9 || held != 9 {
		t.Fatalf("load %d running, %d held; want 9 and 9", running, held)
	}
	// The runner never runs more than slots+headroom.
	queues = append(queues, app.RunQueue{Workspace: "ws_c", Invocation: "inv_c", Waiting: 5}, app.RunQueue{Workspace: "ws_d", Invocation: "inv_d", Waiting: 5})
	_, n1 := take(t, s, queues)
	_, n2 := take(t, s, queues)
	if running, _ := s.Load(); n1 != 1 || n2 != 0 || running != 10 {
		t.Fatalf("took %d then %d more, %d running; want 1, 0 and 10 (8 slots + 2 headroom)", n1, n2, running)
	}
}

// A freed slot goes to the workspace running the fewest jobs, so two
// busy workspaces end up sharing the runner; among workspaces running
// as many, the least recently served goes first.
func TestSchedulerFewestRunningFirst(t *testing.T) {
	s := app.NewScheduler(4, 1)
	queues := []app.RunQueue{{Workspace: "ws_a", Invocation: "inv_a", Waiting: 100}}
	take(t, s, queues) // ws_a runs 4
	queues = append(queues, app.RunQueue{Workspace: "ws_b", Invocation: "inv_b", Waiting: 100})
	if q, n := take(t, s, queues); q.Workspace != "ws_b" || n != 1 {
		t.Fatalf("headroom went to %+v (%d)", q, n)
	}
	// As ws_a's jobs finish, the slots go to ws_b until they run as many.
	var got []string
	for range 3 {
		s.Done("ws_a", "inv_a")
		q, n := take(t, s, queues)
		if n != 1 {
			t.Fatalf("took %d jobs for one freed slot", n)
		}
		got = append(got, q.Workspace)
	}
	// ws_b first (it ran 1, ws_a 3), then both run 2 and take turns.
	if want := []string{"ws_b", "ws_a", "ws_b"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("freed slots went to %v, want %v", got, want)
	}
	// Equal load: the one served longer ago goes first.
	s2 := app.NewScheduler(4, 1)
	two := []app.RunQueue{{Workspace: "ws_x", Invocation: "i1", Waiting: 10}, {Workspace: "ws_y", Invocation: "i2", Waiting: 10}}
	first, _ := take(t, s2, two)
	second, _ := take(t, s2, two)
	if first.Workspace == second.Workspace {
		t.Fatalf("two idle workspaces: both turns went to %s", first.Workspace)
	}
}

// Within a workspace, invocations take turns: a large invocation queued
// first does not hold back a small one queued after it.
func TestSchedulerInvocationsOfAWorkspaceTakeTurns(t *testing.T) {
	s := app.NewScheduler(4, 1)
	queues := []app.RunQueue{{Workspace: "ws_a", Invocation: "inv_big", Waiting: 5000}, {Workspace: "ws_a", Invocation: "inv_small", Waiting: 3}}
	seen := map[string]int{}
	for range 4 {
		q, n := take(t, s, queues)
		seen[q.Invocation] += n
	}
	if seen["inv_small"] < 2 || seen["inv_big"] < 2 {
		t.Fatalf("the first 4 slots went %v, want them shared", seen)
	}
}

// A run waiting on an endpoint gives its slot back: the workspace's other
// invocations and other workspaces run meanwhile, and the jobs held stay
// bounded (slots per invocation, 2*slots+headroom in all).
func TestSchedulerPausedRunsFreeTheirSlots(t *testing.T) {
	s := app.NewScheduler(4, 1)
	queues := []app.RunQueue{{Workspace: "ws_a", Invocation: "inv_slow", Waiting: 1000}}
	takeAllPaused(t, s, queues) // every run waits for the slow endpoint
	running, held := s.Load()
	if running != 0 || held != 4 {
		t.Fatalf("%d running and %d held once every run waits; want 0 and 4 (the slots, for one invocation)", running, held)
	}
	queues = append(queues, app.RunQueue{Workspace: "ws_a", Invocation: "inv_other", Waiting: 10})
	if q, n := take(t, s, queues); q.Invocation != "inv_other" || n != 4 {
		t.Fatalf("the workspace's other invocation got %d jobs (%+v) beside the waiting runs, want the 4 free slots", n, q)
	}
	queues = append(queues, app.RunQueue{Workspace: "ws_b", Invocation: "inv_b", Waiting: 10})
	if q, n := take(t, s, queues); q.Workspace != "ws_b" || n != 1 {
		t.Fatalf("another workspace got %d jobs (%+v), want the headroom's 1", n, q)
	}
	if running, held := s.Load(); running != 5 || held != 9 {
		t.Fatalf("%d running, %d held; want 5 and 9 (the bound: 2 x 4 + 1)", running, held)
	}
	// A resumed run takes its slot back even past the bounds; no new job
	// is taken until the runner is below them again.
	for range 4 {
		s.Resumed("ws_a")
	}
	if _, n := take(t, s, queues); n != 0 {
		t.Fatalf("took %d jobs with every slot busy", n)
	}
	for range 4 {
		s.Done("ws_a", "inv_slow")
		s.Done("ws_a", "inv_other")
	}
	if running, held := s.Load(); running != 1 || held != 1 {
		t.Fatalf("%d running, %d held once ws_a's runs are done; want ws_b's 1", running, held)
	}
	// Three queues wait: each gets a share of the 4 free slots, ws_a first
	// (it runs fewer than ws_b).
	if q, n := take(t, s, queues); q.Workspace != "ws_a" || n != 1 {
		t.Fatalf("after the slow runs: %d jobs of %+v, want 1 of ws_a", n, q)
	}
}

// A workspace whose runs all wait on slow endpoints holds at most twice
// the slots: another workspace's one job is still taken, with the slots
// idle, where it used to wait for the first workspace's runs. Alone, a
// workspace still runs every slot beside the runs it has waiting.
func TestSchedulerPausedWorkspaceLeavesHeadroomToOthers(t *testing.T) {
	s := app.NewScheduler(4, 1)
	queues := []app.RunQueue{{Workspace: "ws_a", Invocation: "inv_1", Waiting: 100},
		{Workspace: "ws_a", Invocation: "inv_2", Waiting: 100}, {Workspace: "ws_a", Invocation: "inv_3", Waiting: 100}}
	takeAllPaused(t, s, queues) // every run waits for a slow endpoint
	queues = append(queues, app.RunQueue{Workspace: "ws_b", Invocation: "inv_b", Waiting: 1})
	if q, n := take(t, s, queues); q.Workspace != "ws_b" || n != 1 {
		t.Fatalf("ws_b got %d jobs (%+v) beside ws_a's waiting runs; want its one", n, q)
	}
	if running, held := s.Load(); running != 1 || held != 9 {
		t.Fatalf("%d running, %d held; want ws_b's 1 running, and ws_a's 8 (twice the slots) held beside it", running, held)
	}

	// Alone, with as many runs waiting as it has slots, a workspace still
	// runs every slot.
	s = app.NewScheduler(4, 1)
	alone := []app.RunQueue{{Workspace: "ws_a", Invocation: "inv_1", Waiting: 100}, {Workspace: "ws_a", Invocation: "inv_2", Waiting: 100}}
	if _, n := take(t, s, alone[:1]); n != 4 {
		t.Fatalf("a workspace alone took %d jobs; want 4", n)
	}
	for range 4 {
		s.Paused("ws_a")
	}
	if got := takeAll(t, s, alone); got != 4 {
		t.Fatalf("a workspace alone with 4 runs waiting took %d more; want 4, every slot", got)
	}
	if running, held := s.Load(); running != 4 || held != 8 {
		t.Fatalf("%d running, %d held; want 4 and 8", running, held)
	}
}
