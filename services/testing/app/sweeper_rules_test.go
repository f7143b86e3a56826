package app_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Rule tests of the completion sweeper (RunCompletionSweeper) on the
// memory ports and index. The sweeper ticks on a real ticker (its
// interval is all it takes); the test waits on sweeps, never on time.

// sweptModel is the memory index counting the sweeps (each starts with
// Running); it fails the first failFirst of them and lists extra
// invocations ahead of the running ones.
type sweptModel struct {
	app.ReadModel
	mu        sync.Mutex
	sweeps    int
	failFirst int
	extra     []app.InvocationSummary
}

func (m *sweptModel) Running(ctx context.Context) ([]app.InvocationSummary, error) {
	m.mu.Lock()
	m.sweeps++
	fail := m.sweeps <= m.failFirst
	m.mu.Unlock()
	if fail {
		return nil, errors.New("read model unreachable")
	}
	docs, err := m.ReadModel.Running(ctx)
	return append(append([]app.InvocationSummary(nil), m.extra...), docs...), err
}

func (m *sweptModel) started() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sweeps
}

// startSweeper runs the sweeper on m every millisecond until the test
// ends, when it must return.
func startSweeper(t *testing.T, a *app.App, m *sweptModel) {
	t.Helper()
	a.ReadModel = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.RunCompletionSweeper(ctx, time.Millisecond); close(done) }()
	t.Cleanup(func() {
		cancel()
		testkit.Eventually(t, 5*time.Second, "the sweeper returns once its context ends", func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		})
	})
}

// awaitSweeps waits until n more sweeps have run whole (the one under
// way when it is called excepted).
func awaitSweeps(t *testing.T, m *sweptModel, n int) {
	t.Helper()
	until := m.started() + n + 1
	testkit.Eventually(t, 5*time.Second, "sweeps", func() bool { return m.started() >= until })
}

func (w *world) status(id string) string { w.t.Helper(); return w.get(id).GetStatus() }

// The sweeper completes every running invocation whose jobs are all
// done, in every workspace, with its outcome; one with a job left stays
// running, sweep after sweep.
func TestTheSweeperCompletesFinishedInvocationsOfEveryWorkspace(t *testing.T) {
	w := newWorld(t)
	other := w.inWorkspace("ws_other")
	done, elsewhere, left := w.run(2), other.run(1), w.run(1)
	w.work(done.GetInvocationId(), passEven)
	other.work(elsewhere.GetInvocationId(), func(int) string { return domain.RunFailed })

	m := &sweptModel{ReadModel: w.a.ReadModel}
	startSweeper(t, w.a, m)
	testkit.Eventually(t, 5*time.Second, "both finished invocations completed", func() bool {
		return w.status(done.GetInvocationId()) == domain.InvocationCompleted &&
			other.status(elsewhere.GetInvocationId()) == domain.InvocationCompleted
	})
	if got := w.get(done.GetInvocationId()); got.GetPassedCount() != 1 || got.GetFailedCount() != 1 {
		t.Fatalf("completed with passed %d, failed %d; want 1 and 1", got.GetPassedCount(), got.GetFailedCount())
	}
	if got := other.get(elsewhere.GetInvocationId()); got.GetPassedCount() != 0 || got.GetFailedCount() != 1 {
		t.Fatalf("the other workspace's completed with passed %d, failed %d; want 0 and 1", got.GetPassedCount(), got.GetFailedCount())
	}
	awaitSweeps(t, m, 2)
	if s := w.status(left.GetInvocationId()); s != domain.InvocationRunning {
		t.Fatalf("an invocation with its job waiting was swept to %s", s)
	}
	// Once its job is done, the next sweeps complete it too.
	w.work(left.GetInvocationId(), passEven)
	testkit.Eventually(t, 5*time.Second, "the last invocation completed", func() bool {
		return w.status(left.GetInvocationId()) == domain.InvocationCompleted
	})
}

// A sweep that cannot list the running invocations, or that fails to
// check one of them, does not stop the sweeper: the others complete.
func TestTheSweeperOutlivesItsFailures(t *testing.T) {
	w := newWorld(t)
	inv := w.run(1)
	w.work(inv.GetInvocationId(), passEven)
	// The first two sweeps find no read model; every sweep lists first an
	// invocation whose check fails (no subject can name it).
	m := &sweptModel{ReadModel: w.a.ReadModel, failFirst: 2,
		extra: []app.InvocationSummary{{WorkspaceID: "ws", ID: "tinv.bad", Status: domain.InvocationRunning}}}
	startSweeper(t, w.a, m)
	testkit.Eventually(t, 5*time.Second, "the finished invocation completed", func() bool {
		return w.status(inv.GetInvocationId()) == domain.InvocationCompleted
	})
	if n := m.started(); n < 3 {
		t.Fatalf("completed after %d sweeps; the first 2 failed", n)
	}
}
