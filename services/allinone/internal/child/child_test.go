package child

import (
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

func TestAChildsLogIsKeptAndItsExitSeen(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	p, err := Start(exec.Command("sh", "-c", "echo one >&2; echo two >&2; exit 3"), func(line []byte) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(line))
	})
	if err != nil {
		t.Fatal(err)
	}
	at, status := p.Exit()
	if status != "exit status 3" || at.IsZero() || p.Logs() != "one\ntwo\n" {
		t.Fatalf("exit %q at %s, logs %q", status, at, p.Logs())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "one,two" {
		t.Fatalf("the watcher saw %q", seen)
	}
}

func TestStopSignalsThenKills(t *testing.T) {
	// A process that ends on the signal.
	p, err := Start(exec.Command("sleep", "60"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(syscall.SIGTERM, time.Minute)
	if _, status := p.Exit(); status != "signal: terminated" {
		t.Fatalf("stopped with SIGTERM: %q", status)
	}
	// One that ignores it is killed once the grace has passed.
	p, err = Start(exec.Command("sh", "-c", `trap "" TERM; echo ready >&2; while :; do sleep 1 >/dev/null 2>&1; done`), nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the trap is set", func() bool { return strings.Contains(p.Logs(), "ready") })
	p.Stop(syscall.SIGTERM, 100*time.Millisecond)
	if _, status := p.Exit(); status != "signal: killed" {
		t.Fatalf("a process ignoring SIGTERM: %q", status)
	}
}
