package app

import (
	"context"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// TestStatuses folds the statuses of an invocation's runs into one status
// per test id: failed if any of its runs failed, passed if all passed,
// else pending. It holds one entry per distinct test, never per run.
type TestStatuses struct {
	inv    *testingv1.Invocation
	repeat int
	seen   map[string]uint8 // test id → sawRun | sawFailed | sawNotPassed
}

const (
	sawRun uint8 = 1 << iota
	sawFailed
	sawNotPassed
)

func NewTestStatuses(inv *testingv1.Invocation) *TestStatuses {
	return &TestStatuses{inv: inv, repeat: int(max(inv.GetRepeatCount(), 1)), seen: map[string]uint8{}}
}

// add counts run idx with its status.
func (s *TestStatuses) Add(idx int, status string) {
	id := s.inv.GetTests()[idx/s.repeat].GetTestId()
	f := s.seen[id] | sawRun
	switch status {
	case domain.RunPassed:
	case domain.RunFailed:
		f |= sawFailed
	default:
		f |= sawNotPassed
	}
	s.seen[id] = f
}

// status is a test's status over its runs, and whether it ran at all.
func (s *TestStatuses) status(testID string) (string, bool) {
	f, ok := s.seen[testID]
	switch {
	case !ok:
		return "", false
	case f&sawFailed != 0:
		return domain.RunFailed, true
	case f&sawNotPassed != 0:
		return domain.RunPending, true
	}
	return domain.RunPassed, true
}

// testStatusesOf reads the status of every test of a stored invocation.
func (a *App) testStatusesOf(ctx context.Context, inv *testingv1.Invocation) (*TestStatuses, error) {
	s := NewTestStatuses(inv)
	_, err := a.EachRun(ctx, inv, false, nil, func(idx int, _ string, res *testingv1.RunResult, unrun string) error {
		s.Add(idx, RunStatus(res, unrun))
		return nil
	})
	return s, err
}

// TestChange is one test in a baseline comparison.
type TestChange struct {
	TestID         string  `json:"test_id"`
	TestName       string  `json:"test_name"`
	BaselineStatus *string `json:"baseline_status"` // null: the baseline did not run it
	Status         string  `json:"status"`
}

// BaselineComparison compares the tests of an invocation with those of a
// baseline invocation, by test id.
type BaselineComparison struct {
	BaselineInvocationID string       `json:"baseline_invocation_id"`
	Regressions          []TestChange `json:"regressions"`   // passed in the baseline, failed now
	Fixes                []TestChange `json:"fixes"`         // failed in the baseline, passed now
	NewFailures          []TestChange `json:"new_failures"`  // failed now, not run in the baseline
	StillFailing         []TestChange `json:"still_failing"` // failed in both
}

// compare compares now (of inv) with base (of baseline), in the order of
// inv's tests.
func compare(inv *testingv1.Invocation, now, base *TestStatuses, baselineID string) BaselineComparison {
	c := BaselineComparison{BaselineInvocationID: baselineID,
		Regressions: []TestChange{}, Fixes: []TestChange{}, NewFailures: []TestChange{}, StillFailing: []TestChange{}}
	done := map[string]bool{}
	for _, pt := range inv.GetTests() {
		id := pt.GetTestId()
		if done[id] {
			continue
		}
		done[id] = true
		cur, ok := now.status(id)
		if !ok {
			continue
		}
		was, ran := base.status(id)
		change := TestChange{TestID: id, TestName: orDefault(pt.GetTestName(), "Unknown Test"), Status: cur}
		if ran {
			change.BaselineStatus = &was
		}
		switch {
		case cur == domain.RunFailed && !ran:
			c.NewFailures = append(c.NewFailures, change)
		case cur == domain.RunFailed && was == domain.RunPassed:
			c.Regressions = append(c.Regressions, change)
		case cur == domain.RunFailed && was == domain.RunFailed:
			c.StillFailing = append(c.StillFailing, change)
		case cur == domain.RunPassed && was == domain.RunFailed:
			c.Fixes = append(c.Fixes, change)
		}
	}
	return c
}

// CompareWith compares the tests of inv, whose statuses are now, with
// those of the stored invocation baseline.
func (a *App) CompareWith(ctx context.Context, inv *testingv1.Invocation, now *TestStatuses, baseline *testingv1.Invocation) (BaselineComparison, error) {
	base, err := a.testStatusesOf(ctx, baseline)
	if err != nil {
		return BaselineComparison{}, err
	}
	return compare(inv, now, base, baseline.GetInvocationId()), nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
