package stack

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// The embedded store runs beside the platform and nothing starts it
// again: once it is gone, the process says it is not live (so that its
// supervisor restarts it) and names why, where before it stayed live for
// good with every listing failing.
func TestAStoreThatStopsByItselfMakesThePlatformNotLive(t *testing.T) {
	var storeDir string
	s := startAdmin(t, func(c *Config) {
		c.Store = func(dir string) (string, func(), func() error, error) {
			storeDir = dir
			return testenv.StoreProcess(dir)
		}
	})
	if r := call(t, s, "GET", "/healthz", "", ""); r.Code != 200 {
		t.Fatalf("not live with its store serving: %d %s", r.Code, r.Body)
	}
	pid := processWithArg(t, storeDir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "not live once the store is gone", func() bool {
		r := call(t, s, "GET", "/healthz", "", "")
		return r.Code == 503 && strings.Contains(string(r.Body), "embedded_store")
	})
}

// processWithArg is the one process whose command line has arg as an
// argument.
func processWithArg(t *testing.T, arg string) int {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	found := []int{}
	for _, path := range cmdlines {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // ended meanwhile
		}
		for a := range strings.SplitSeq(string(raw), "\x00") {
			if a == arg {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
				found = append(found, pid)
				break
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("processes started with %s: %v; want one", arg, found)
	}
	return found[0]
}
