package runner

import (
	"context"
	"strings"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Vote is one verdict of the judge when it was asked more than once.
type Vote struct {
	Result  string
	Summary string
}

// judge asks m for a verdict. A model judge can be wrong in either
// direction, and a wrong failure costs someone an investigation: a
// failure is judged again, up to e.JudgeVotes verdicts in all, and the
// majority decides. Asking stops once a result has a majority. Only a
// failure is re-judged: a success stands, and "unknown" (no verdict) is
// not a failure. A deterministic model takes one vote. votes is every
// verdict when more than one was taken.
func (e *Executor) judge(ctx context.Context, m Model, in JudgeInput, usage *Usage) (Verdict, []Vote, error) {
	first, u, err := m.Judge(ctx, in)
	usage.Add(u)
	n := max(e.JudgeVotes, 1)
	if d, ok := m.(Deterministic); ok && d.Deterministic() {
		n = 1
	}
	if err != nil || first.Result != domain.ConditionFailure || n == 1 {
		return first, nil, err
	}
	verdicts := []Verdict{first}
	for len(verdicts) < n && majority(verdicts, n) == "" {
		v, u, err := m.Judge(ctx, in)
		usage.Add(u)
		if err != nil {
			return Verdict{}, nil, err
		}
		verdicts = append(verdicts, v)
	}
	votes := make([]Vote, len(verdicts))
	for i, v := range verdicts {
		votes[i] = Vote{Result: v.Result, Summary: v.Summary}
	}
	decided := majority(verdicts, n)
	for _, v := range verdicts {
		if v.Result == decided {
			return v, votes, nil // the first verdict of the majority speaks for it
		}
	}
	msg := "The judge's verdicts had no majority" + votesNote(votes) + "."
	return Verdict{Result: domain.ConditionUnknown, Messages: []string{msg}, Summary: msg}, votes, nil
}

// majority is the result more than half of n votes gave, or "".
func majority(verdicts []Verdict, n int) string {
	count := map[string]int{}
	for _, v := range verdicts {
		if count[v.Result]++; count[v.Result] > n/2 {
			return v.Result
		}
	}
	return ""
}

// votesNote lists the verdicts of a re-judged check for its rationale.
func votesNote(votes []Vote) string {
	if len(votes) == 0 {
		return ""
	}
	results := make([]string, len(votes))
	for i, v := range votes {
		results[i] = v.Result
	}
	return " (judge votes: " + strings.Join(results, ", ") + ")"
}
