package multiprocess

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// When a test of this package fails, every process's logs are shown, and
// they bury the lines that say what failed (CI shows the end of the
// output). So failures are kept per test and said again, last.
var failures = struct {
	sync.Mutex
	byTest map[string][]string
}{byTest: map[string][]string{}}

// errorf is t.Errorf, kept to be repeated after the logs.
func errorf(t testing.TB, format string, args ...any) {
	t.Helper()
	keep(t, fmt.Sprintf(format, args...))
	t.Errorf(format, args...)
}

// fatalf is t.Fatalf, kept to be repeated after the logs.
func fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	keep(t, fmt.Sprintf(format, args...))
	t.Fatalf(format, args...)
}

func keep(t testing.TB, msg string) {
	failures.Lock()
	defer failures.Unlock()
	failures.byTest[t.Name()] = append(failures.byTest[t.Name()], msg)
}

// repeatFailuresLast registers, before anything else of the test, the
// cleanup that runs last: on failure it says the kept failures again.
func repeatFailuresLast(t *testing.T) {
	t.Cleanup(func() {
		failures.Lock()
		msgs := failures.byTest[t.Name()]
		failures.Unlock()
		if t.Failed() && len(msgs) > 0 {
			t.Logf("what failed (the logs above are the processes'):\n  %s", strings.Join(msgs, "\n  "))
		}
	})
}
