package app

import (
	"strings"
	"testing"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// A test's status over its repeats: failed if any failed, passed if all
// passed, else pending; compared by test id.
func TestCompareWithABaseline(t *testing.T) {
	planned := func(ids ...string) []*testingv1.PlannedTest {
		var out []*testingv1.PlannedTest
		for _, id := range ids {
			out = append(out, &testingv1.PlannedTest{TestId: id, TestName: "name of " + id})
		}
		return out
	}
	base := &testingv1.Invocation{InvocationId: "tinv_base", RepeatCount: 2, Tests: planned("reg", "fix", "still", "same", "gone", "pend")}
	cur := &testingv1.Invocation{InvocationId: "tinv_cur", RepeatCount: 2, Tests: planned("reg", "fix", "still", "same", "new", "pend", "newpass")}
	b, c := NewTestStatuses(base), NewTestStatuses(cur)
	statuses := func(s *TestStatuses, runs ...string) {
		for i, st := range runs {
			s.Add(i, st)
		}
	}
	P, F, W, X := domain.RunPassed, domain.RunFailed, domain.RunPending, domain.RunCancelled
	statuses(b, P, P, F, P, F, F, P, P, F, F, P, W)
	statuses(c, P, F, P, P, F, X, P, P, F, P, P, W, P, P)
	got := compare(cur, c, b, "tinv_base")
	names := func(ch []TestChange) string {
		var out []string
		for _, x := range ch {
			bs := "null"
			if x.BaselineStatus != nil {
				bs = *x.BaselineStatus
			}
			out = append(out, x.TestID+":"+bs+">"+x.Status+":"+x.TestName)
		}
		return strings.Join(out, ",")
	}
	if got.BaselineInvocationID != "tinv_base" ||
		names(got.Regressions) != "reg:passed>failed:name of reg" ||
		names(got.Fixes) != "fix:failed>passed:name of fix" ||
		names(got.StillFailing) != "still:failed>failed:name of still" ||
		names(got.NewFailures) != "new:null>failed:name of new" {
		t.Fatalf("comparison: %+v\nregressions %s\nfixes %s\nstill %s\nnew %s", got,
			names(got.Regressions), names(got.Fixes), names(got.StillFailing), names(got.NewFailures))
	}
	if st, _ := c.status("pend"); st != domain.RunPending {
		t.Fatalf("a test with a pending run and no failure is %s", st)
	}
	if st, _ := c.status("still"); st != domain.RunFailed {
		t.Fatalf("a test with a failed and a cancelled run is %s", st)
	}
}
