package domain

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// MaxLatencyBudgetMs bounds each latency budget (ten minutes, far past
// any run's time limit); the schema (LatencyBudget) says the same.
const MaxLatencyBudgetMs = 600_000

// Latency budget metrics, as a breach names them.
const (
	BudgetFirstTokenP95 = "first_token_p95" // time to first token, p95 over the run's agent turns
	BudgetTurnP95       = "turn_p95"        // the whole turn, p95 over the run's agent turns
)

// LatencyBudget is a test's latency_budget (an extension of the public
// test): the most its agent may take, at the 95th percentile of a run's
// agent turns, to its first token and to the end of its turn, in
// milliseconds. A bound left out is not checked.
type LatencyBudget struct {
	FirstTokenP95Ms *int64 `json:"first_token_p95_ms"`
	TurnP95Ms       *int64 `json:"turn_p95_ms"`
}

// BudgetBreach is a budget a run went over: the measured figure and the
// budget.
type BudgetBreach struct {
	Metric     string // BudgetFirstTokenP95 or BudgetTurnP95
	MeasuredMs int64
	BudgetMs   int64
}

// Sentence says the breach as a rationale does.
func (b BudgetBreach) Sentence() string {
	what := "Time to first token"
	if b.Metric == BudgetTurnP95 {
		what = "Whole turn time"
	}
	return fmt.Sprintf("%s p95 %d ms is over the test's budget of %d ms.", what, b.MeasuredMs, b.BudgetMs)
}

// NearestRankPercentile is the nearest-rank percentile p (0 < p ≤ 1) of
// ms; false when ms is empty. agent_latency's figures are these, so a
// budget is checked against the number a run shows.
func NearestRankPercentile(ms []int64, p float64) (int64, bool) {
	if len(ms) == 0 {
		return 0, false
	}
	sorted := slices.Sorted(slices.Values(ms))
	return sorted[max(int(math.Ceil(p*float64(len(sorted))))-1, 0)], true
}

// Breaches are the budgets the measured turns go over: first token, then
// whole turn. turnMs and firstTokenMs are a run's agent turns (answers
// from the response cache already left out); with none measured there is
// nothing to hold to a budget, and nothing is a breach.
func (b *LatencyBudget) Breaches(turnMs, firstTokenMs []int64) []BudgetBreach {
	if b == nil {
		return nil
	}
	var out []BudgetBreach
	check := func(metric string, budget *int64, ms []int64) {
		if budget == nil {
			return
		}
		if p95, ok := NearestRankPercentile(ms, 0.95); ok && p95 > *budget {
			out = append(out, BudgetBreach{Metric: metric, MeasuredMs: p95, BudgetMs: *budget})
		}
	}
	check(BudgetFirstTokenP95, b.FirstTokenP95Ms, firstTokenMs)
	check(BudgetTurnP95, b.TurnP95Ms, turnMs)
	return out
}

// Outcome is a judged run's status and rationale.
type Outcome struct {
	Status   string // RunPassed or RunFailed
	Messages []string
	Summary  string
	Breaches []BudgetBreach
}

// HoldToLatencyBudget applies a test's latency budget to a run its judge
// has decided: a run over budget fails whatever the judge said. The
// judge's verdict (condition_result) is left as it was; the breaches are
// appended to the rationale's messages and lead its summary (what a
// ticket and a JUnit failure show first), the judge's summary after
// them.
func HoldToLatencyBudget(o Outcome, b *LatencyBudget, turnMs, firstTokenMs []int64) Outcome {
	breaches := b.Breaches(turnMs, firstTokenMs)
	if len(breaches) == 0 {
		return o
	}
	sentences := make([]string, len(breaches))
	for i, br := range breaches {
		sentences[i] = br.Sentence()
	}
	o.Status = RunFailed
	o.Breaches = breaches
	o.Messages = append(slices.Clip(o.Messages), sentences...)
	o.Summary = strings.TrimSpace(strings.Join(sentences, " ") + " " + o.Summary)
	return o
}
