package app_test

import (
	"fmt"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// takeAll takes jobs from queues until the scheduler gives no more, and
// is how many it gave.
func takeAll(t *testing.T, s *app.Scheduler, queues []app.RunQueue) int {
	t.Helper()
	total := 0
	for {
		_, n := take(t, s, queues)
		if n == 0 {
			return total
		}
		total += n
	}
}

// Capacity is slots plus headroom (headroom 0: a quarter of the slots,
// at least 1; at least 1 slot), and it is what the runner runs at once
// however many workspaces wait.
func TestSchedulerCapacityIsSlotsPlusHeadroom(t *testing.T) {
	for _, tc := range []struct{ slots, headroom, want int }{
		{8, 2, 10},
		{8, 0, 10},  // a quarter of 8
		{16, 0, 20}, // a quarter of 16
		{2, 0, 3},   // at least 1
		{0, 0, 2},   // at least 1 slot, and 1 headroom
		{4, 7, 11},
	} {
		t.Run(fmt.Sprintf("%d+%d", tc.slots, tc.headroom), func(t *testing.T) {
			s := app.NewScheduler(tc.slots, tc.headroom)
			if got := s.Capacity(); got != tc.want {
				t.Fatalf("capacity %d; want %d", got, tc.want)
			}
			queues := make([]app.RunQueue, 12)
			for i := range queues {
				queues[i] = app.RunQueue{Workspace: fmt.Sprintf("ws_%d", i), Invocation: "inv", Waiting: 100}
			}
			if got := takeAll(t, s, queues); got != s.Capacity() {
				t.Fatalf("twelve busy workspaces got %d jobs at once; want the capacity, %d", got, s.Capacity())
			}
		})
	}
}

// Held counts the jobs the runner holds of one invocation of one
// workspace: running or paused, until done; the same invocation id in
// another workspace is another invocation.
func TestSchedulerHeldCountsAnInvocationsJobs(t *testing.T) {
	s := app.NewScheduler(4, 1)
	queues := []app.RunQueue{
		{Workspace: "ws_a", Invocation: "inv_1", Waiting: 3},
		{Workspace: "ws_a", Invocation: "inv_2", Waiting: 1},
		{Workspace: "ws_b", Invocation: "inv_1", Waiting: 1},
	}
	takeAll(t, s, queues)
	held := func(step string, want map[[2]string]int) {
		t.Helper()
		for k, n := range want {
			if got := s.Held(k[0], k[1]); got != n {
				t.Fatalf("%s: %s/%s holds %d; want %d", step, k[0], k[1], got, n)
			}
		}
	}
	a1, a2, b1 := [2]string{"ws_a", "inv_1"}, [2]string{"ws_a", "inv_2"}, [2]string{"ws_b", "inv_1"}
	held("taken", map[[2]string]int{a1: 3, a2: 1, b1: 1, {"ws_c", "inv_1"}: 0})
	s.Paused("ws_a") // a paused run keeps its job
	held("one paused", map[[2]string]int{a1: 3, a2: 1, b1: 1})
	s.Done("ws_a", "inv_1")
	s.Done("ws_b", "inv_1")
	held("two done", map[[2]string]int{a1: 2, a2: 1, b1: 0})
	s.Done("ws_a", "inv_1")
	s.Done("ws_a", "inv_1")
	s.Done("ws_a", "inv_2")
	held("all done", map[[2]string]int{a1: 0, a2: 0, b1: 0})
}
