package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Run statuses. A run is pending until a runner records its result:
//
//	pending ──runner──▶ passed | failed
//	pending ──cancel──▶ cancelled      (the run had not started)
//	passed|failed|cancelled ──resubmit──▶ pending (a new attempt)
//
// A cancelled run that a later resubmission does not name stays cancelled.
const (
	RunPending   = "pending"
	RunPassed    = "passed"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// Invocation statuses.
const (
	InvocationRunning   = "running"
	InvocationCompleted = "completed"
	InvocationCancelled = "cancelled"
)

// Bucketing statuses (empty when repeat_count is 1):
//
//	pending ──all runs finished, grouped──▶ completed
//	pending ──grouping impossible──▶ failed (bucketing_error says why)
//	completed|failed ──resubmit──▶ pending
const (
	BucketingPending   = "pending"
	BucketingCompleted = "completed"
	BucketingFailed    = "failed"
)

// Condition results.
const (
	ConditionSuccess = "success"
	ConditionFailure = "failure"
	ConditionUnknown = "unknown"
)

// RunID names run index i of an invocation. Run i is repetition
// i % repeat of test i / repeat. The invocation id is unguessable, so the
// run ids are too.
func RunID(invocationID string, index int) string {
	return "trun_" + strings.TrimPrefix(invocationID, "tinv_") + "_" + strconv.Itoa(index)
}

// RunIndex reads the index back from a run id of invocationID.
func RunIndex(invocationID, runID string) (int, error) {
	prefix := "trun_" + strings.TrimPrefix(invocationID, "tinv_") + "_"
	if !strings.HasPrefix(runID, prefix) {
		return 0, fmt.Errorf("run %q is not of invocation %q", runID, invocationID)
	}
	i, err := strconv.Atoi(runID[len(prefix):])
	if err != nil || i < 0 || strconv.Itoa(i) != runID[len(prefix):] {
		return 0, fmt.Errorf("run %q: bad index", runID)
	}
	return i, nil
}

// Bitset records which runs of an invocation have been seen.
type Bitset []uint64

// NewBitset holds n bits.
func NewBitset(n int) Bitset { return make(Bitset, (n+63)/64) }

// Set marks bit i.
func (b Bitset) Set(i int) { b[i/64] |= 1 << (uint(i) % 64) }

// Has reports bit i.
func (b Bitset) Has(i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }

// RunsPerJob is how many consecutive runs one queued job of a new
// invocation carries: one per run up to 10,000 runs, then enough that the
// invocation makes about 5,000 jobs, at most 16 runs each. A large
// invocation then pays the work queue's per-message cost once per job, while
// every worker still has work; a job's runs execute one after another, so
// the cap keeps its last run from waiting long behind a slow model.
func RunsPerJob(totalRuns int) int {
	return min(max(totalRuns/5000, 1), 16)
}
