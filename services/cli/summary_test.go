package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Runs of one test that fail alike are one line with their count; a
// reason too long for the table is printed in full below it.
func TestSummaryGroupsRepeatedFailures(t *testing.T) {
	long := "The agent endpoint unreachable: " + strings.Repeat("a long explanation of what went wrong ", 6) + "END"
	inv := invocation{ID: "tinv_1", Status: "completed"}
	add := func(n int, test, status, reason string) {
		for range n {
			r := testRun{TestID: test, TestName: "name " + test, Status: status, Error: reason}
			inv.TestRuns = append(inv.TestRuns, r)
		}
	}
	add(20, "test_a", "failed", long)
	add(2, "test_a", "failed", "another reason")
	add(3, "test_b", "passed", "")
	var out bytes.Buffer
	(&app{stdout: &out}).summary(inv, time.Second, "")
	got := out.String()
	if !regexp.MustCompile(`FAILED\s+20\s+test_a`).MatchString(got) || !regexp.MustCompile(`FAILED\s+2\s+test_a\s+name test_a\s+another reason`).MatchString(got) {
		t.Fatalf("groups:\n%s", got)
	}
	if strings.Count(got, "test_b") != 0 || !strings.Contains(got, "[1] "+long) || !strings.Contains(got, "3 passed, 22 failed of 25 run(s)") {
		t.Fatalf("full reason and totals:\n%s", got)
	}
}
