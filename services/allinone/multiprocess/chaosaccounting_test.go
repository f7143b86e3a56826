package multiprocess

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/child"
)

// The cluster tier's accounting, without a cluster: which failed attempts
// a fault explains, which fault's error window one counts in, when a load
// has recovered, what make chaos reports and gates on, and which processes
// died by themselves.
func TestChaosAccounting(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	fail := func(began, ended float64) failure {
		return failure{began: at(began), at: at(ended), code: 503, retryAfter: true}
	}

	t.Run("a failure is explained from its fault's start to recoverWithin after its end", func(t *testing.T) {
		c := &checker{p: &platform{faults: []fault{{what: "node-1 killed", start: at(10), end: at(17), restored: at(20)}}}}
		for _, tc := range []struct {
			f    failure
			want bool
		}{
			{fail(5, 8), false},     // before the fault
			{fail(8, 11), true},     // in flight when it began
			{fail(40, 45), true},    // sent 23 s after its end
			{fail(47, 48), true},    // sent 30 s after its end
			{fail(47.5, 49), false}, // sent 30.5 s after its end: not recovered
		} {
			if got, _ := c.explained(tc.f); got != tc.want {
				t.Errorf("failure sent at +%s, ended +%s: explained %v, want %v", tc.f.began.Sub(t0), tc.f.at.Sub(t0), got, tc.want)
			}
		}
	})

	t.Run("each failure counts in the window of the last fault begun before it ended", func(t *testing.T) {
		faults := []fault{{start: at(10)}, {start: at(60)}}
		fails := []failure{fail(1, 2), fail(10, 11), fail(12, 14.5), fail(60, 60.5), fail(61, 61.2)}
		if got, want := window(fails, faults), 4500*time.Millisecond; got != want {
			t.Errorf("window %s, want %s (the first fault's: 10 s to 14.5 s; the one before it belongs to no fault of these)", got, want)
		}
		if got := window(fails, nil); got != 0 {
			t.Errorf("window without faults %s, want 0", got)
		}
	})

	t.Run("a load has recovered once it succeeded after its last failure", func(t *testing.T) {
		l := &load{}
		if _, ok := l.recovered(); !ok {
			t.Error("a load that never failed has not recovered")
		}
		l.acks = []ack{{at: at(1)}}
		l.fails = []failure{fail(2, 3)}
		if _, ok := l.recovered(); ok {
			t.Error("a load failing since its last success has recovered")
		}
		l.acks = append(l.acks, ack{at: at(4)}, ack{at: at(5)})
		if got, ok := l.recovered(); !ok || !got.Equal(at(4)) {
			t.Errorf("recovered %v at %s, want at +4s", ok, got.Sub(t0))
		}
	})

	t.Run("make chaos reports every window against its run's election and gates at + 2 s", func(t *testing.T) {
		ws := func(d time.Duration) map[string]time.Duration {
			return map[string]time.Duration{"tickets": d, "invocations": 0, "events": 0, "reads": 0}
		}
		results := []measurement{
			{run: 1, scenario: "node killed", elected: 6 * time.Second, windows: ws(7 * time.Second)},
			{run: 2, scenario: "node killed", elected: 5 * time.Second, windows: ws(7500 * time.Millisecond)}, // 0.5 s over
			{run: 1, scenario: "replica killed", elected: -1, windows: ws(2 * time.Second)},
			{run: 2, scenario: "replica killed", elected: -1, windows: ws(2100 * time.Millisecond)}, // 0.1 s over
		}
		over := overGoal(results)
		if len(over) != 2 || !strings.Contains(over[0], "run 2, node killed / tickets") || !strings.Contains(over[1], "run 2, replica killed / tickets") {
			t.Errorf("over the goal: %q", over)
		}
		table := chaosTable(2, results)
		t.Logf("the table:\n%s", table)
		for _, want := range []string{"5.0 s", "6.0 s", "7.0 s", "7.5 s", "+2.5 s", "1 of 2", "–", "7.0/6.0 7.5/5.0", "2.0/– 2.1/–"} {
			if !strings.Contains(table, want) {
				t.Errorf("the table lacks %q:\n%s", want, table)
			}
		}
	})

	t.Run("a process that exits by itself died; one the test ended did not", func(t *testing.T) {
		start := func(script string) *proc {
			cp, err := child.Start(exec.Command("sh", "-c", script), nil)
			if err != nil {
				t.Fatal(err)
			}
			return &proc{name: "sh", Proc: cp}
		}
		crashed := start("echo going >&2; exit 3")
		<-crashed.Done()
		if msg, died := crashed.death(); !died || !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "going") {
			t.Errorf("a process that exited with 3: died %v, %q", died, msg)
		}
		if _, again := crashed.death(); again {
			t.Error("a death is reported twice")
		}
		// The test's own stop or kill of a process that died first does
		// not hide its death.
		crashedFirst := start("exit 4")
		<-crashedFirst.Done()
		crashedFirst.kill()
		if msg, died := crashedFirst.death(); !died || !strings.Contains(msg, "exit status 4") {
			t.Errorf("a process that exited with 4, then killed by the test: died %v, %q", died, msg)
		}
		killed := start("exec sleep 60")
		if _, died := killed.death(); died {
			t.Error("a running process died")
		}
		killed.kill()
		if msg, died := killed.death(); died {
			t.Errorf("a process the test killed died: %q", msg)
		}
		// A NATS node is watched without waiting for it (its kill waits):
		// it has ended once a zombie, which /proc shows.
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			t.Skip("no /proc: a node's death is not watched here")
		}
		node := exec.Command("sleep", "60")
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = node.Process.Kill(); _ = node.Wait() })
		if exited(node) {
			t.Error("a running node exited")
		}
		_ = syscall.Kill(node.Process.Pid, syscall.SIGKILL)
		if !eventuallyQuiet(10*time.Second, func() bool { return exited(node) }) {
			t.Error("a killed node, not yet waited for, has not exited")
		}
	})
}
