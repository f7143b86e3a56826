package app

import (
	"context"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Bounds of a test's reliability report: it reads each run's result, so
// its cost is bounded whatever the test's history.
const (
	ReliabilityInvocations = 10  // the most recent invocations that ran the test
	ReliabilityMaxRuns     = 500 // run results read at most
	ReliabilityK           = 3   // pass^k's default k
)

// InvocationReliability is a test's record in one invocation (its repeats):
// its pass rate, and every agent turn of its finished runs (whole turn and
// time to first token, in milliseconds), for the latency a caller heard.
type InvocationReliability struct {
	InvocationID  string
	AgentID       string
	CreatedAtUnix int64
	domain.Reliability
	TurnMs, FirstTokenMs []int64
}

// TestReliability is a test's record over its recent invocations, newest
// first, and over all of them together. Only passed and failed runs
// count: pending and cancelled ones say nothing of the test. The agent's
// latency comes from the same results, so it costs no further read.
func (a *App) TestReliability(ctx context.Context, ws, testID string, k int) (domain.Reliability, []InvocationReliability, error) {
	page, _, err := a.ReadModel.PageInvocations(ctx, InvocationFilter{WorkspaceID: ws, TestID: testID, Limit: ReliabilityInvocations})
	if err != nil {
		return domain.Reliability{}, nil, err
	}
	var per []InvocationReliability
	var passed, runs int64
	budget := ReliabilityMaxRuns
	for _, s := range page {
		inv, _, err := a.Invocations.Get(ctx, ws, s.ID)
		if err != nil {
			return domain.Reliability{}, nil, err
		}
		repeat := int(max(inv.GetRepeatCount(), 1))
		var p, n int64
		var turnMs, firstTokenMs []int64
		for i, pt := range inv.GetTests() {
			if pt.GetTestId() != testID {
				continue
			}
			for r := 0; r < repeat && budget > 0; r++ {
				budget--
				run, err := a.lastRunResult(ctx, ws, s.ID, domain.RunID(s.ID, i*repeat+r))
				if err != nil {
					return domain.Reliability{}, nil, err
				}
				if run == nil {
					continue
				}
				switch run.GetStatus() {
				case domain.RunPassed:
					p, n = p+1, n+1
				case domain.RunFailed:
					n++
				default:
					continue
				}
				turnMs = append(turnMs, run.GetAgentTurnMs()...)
				firstTokenMs = append(firstTokenMs, run.GetAgentFirstTokenMs()...)
			}
		}
		if n > 0 {
			per = append(per, InvocationReliability{InvocationID: s.ID, AgentID: s.AgentID, CreatedAtUnix: s.CreatedAtUnix, Reliability: domain.NewReliability(p, n, k),
				TurnMs: turnMs, FirstTokenMs: firstTokenMs})
			passed, runs = passed+p, runs+n
		}
	}
	return domain.NewReliability(passed, runs, k), per, nil
}
