package cli

import (
	"strings"
	"testing"
	"time"
)

func waitedAtLeast(waits []time.Duration, d time.Duration) bool {
	for _, w := range waits {
		if w >= d {
			return true
		}
	}
	return false
}

// A --wait follower slows down on the rate limit (as long as Retry-After
// asks) and tries again through a dropped connection and an outage: the
// invocation goes on, so must the CI job.
func TestWaitRidesOutRateLimitsAndOutages(t *testing.T) {
	t.Run("tests run", func(t *testing.T) {
		waits := noSleep(t)
		f, base := newFake(t)
		invocationServer(t, f, "passed")
		f.on("GET /v1/convai/test-invocations/tinv_1", script(
			withRetryAfter("36", reply(429, rateLimited)),
			hangUp,
			reply(503, `{"detail":"restarting"}`),
			reply(504, `gateway time-out`),
			reply(200, `{"id":"tinv_1","agent_id":"agent_1","status":"completed","test_runs":[{"test_run_id":"trun_0","test_id":"test_0","status":"passed"}]}`)))
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--wait", "--poll", "1ms")
		if r.code != ExitOK || !strings.Contains(r.stdout, "1 passed, 0 failed of 1 run(s)") {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if strings.Count(r.stderr, "waiting for invocation tinv_1: Too many requests.") != 1 || !strings.Contains(r.stderr, "the platform answers again") {
			t.Fatalf("stderr %q", r.stderr)
		}
		if !waitedAtLeast(waits(), 36*time.Second) {
			t.Fatalf("Retry-After 36 not honoured: waits %v", waits())
		}
	})
	t.Run("tests load", func(t *testing.T) {
		waits := noSleep(t)
		f, base := newFake(t)
		f.on("POST /v1/convai/agents/agent_1/load-tests", reply(201, runningLoad))
		f.on("GET /v1/convai/load-tests/tinv_9", script(
			withRetryAfter("36", reply(429, rateLimited)),
			hangUp,
			reply(502, `bad gateway`),
			reply(200, doneLoad)))
		r := runOn(t, base, "tests", "load", "--agent", "agent_1", "--test", "test_0", "--steps", "1,10,50", "--wait", "--poll", "1ms")
		if r.code != ExitFailed || !strings.Contains(r.stdout, "The budget broke at step 3") {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if !waitedAtLeast(waits(), 36*time.Second) {
			t.Fatalf("Retry-After 36 not honoured: waits %v", waits())
		}
	})
	// Until --timeout: then the usual time-out, which says the invocation
	// goes on. (The real wait of 36 s is cut by the 50 ms time-out.)
	t.Run("until the time-out", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed")
		f.on("GET /v1/convai/test-invocations/tinv_1", withRetryAfter("36", reply(429, rateLimited)))
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--wait", "--poll", "1ms", "--timeout", "50ms")
		if r.code != ExitError || !strings.Contains(r.stderr, "timed out after 50ms waiting for invocation tinv_1; it goes on running on the server") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}
