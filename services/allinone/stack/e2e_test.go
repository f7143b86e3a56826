package stack

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// e2eRuns holds one lock per suite: the tests run in parallel, and two runs
// of one suite on a fresh clone would both install its node_modules.
var e2eRuns sync.Map // script -> *sync.Mutex

// e2eSuite is the script that runs the Node suite e2e/<name> (run.sh). A
// machine without Node skips the test, saying so.
func e2eSuite(t *testing.T, name string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the " + name + " tests need Node 20 (" + err.Error() + ")")
	}
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "e2e", name, "run.sh")
}

// runE2E runs script (with args, when a test names what the suite runs)
// against s with the admin key and env, logs what it printed, and fails
// the test when it fails.
func runE2E(t *testing.T, s *Stack, script string, args []string, env ...string) {
	t.Helper()
	mu, _ := e2eRuns.LoadOrStore(script, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(append(os.Environ(), "VOICEAI_BASE_URL=http://"+s.Addr, "VOICEAI_API_KEY="+adminKey), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Log(out.String())
	if err != nil {
		t.Fatalf("%s failed: %v", filepath.Base(filepath.Dir(script)), err)
	}
}

// screenshotsDir is where a browser suite keeps its screenshots:
// $VOICEAI_ARTIFACTS, else a temporary directory kept only when the test
// fails.
func screenshotsDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("VOICEAI_ARTIFACTS"); dir != "" {
		return dir
	}
	dir, err := os.MkdirTemp("", "voiceai-browser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	return dir
}
