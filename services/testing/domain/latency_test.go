package domain

import (
	"reflect"
	"slices"
	"testing"
)

func ms(v int64) *int64 { return &v }

// The nearest-rank p95 of twenty turns is the nineteenth smallest; of
// one turn, that turn; of none, nothing.
func TestNearestRankPercentile(t *testing.T) {
	var twenty []int64
	for i := int64(20); i >= 1; i-- {
		twenty = append(twenty, i*10) // 200, 190, … 10: order does not matter
	}
	for _, c := range []struct {
		ms   []int64
		p    float64
		want int64
		ok   bool
	}{
		{twenty, 0.95, 190, true},
		{twenty, 0.5, 100, true},
		{twenty, 1, 200, true},
		{[]int64{912}, 0.95, 912, true},
		{[]int64{100, 900}, 0.95, 900, true},
		{nil, 0.95, 0, false},
	} {
		got, ok := NearestRankPercentile(c.ms, c.p)
		if got != c.want || ok != c.ok {
			t.Errorf("p%v of %v = %d, %v; want %d, %v", c.p*100, c.ms, got, ok, c.want, c.ok)
		}
	}
}

func TestLatencyBudgetRule(t *testing.T) {
	judged := Outcome{Status: RunPassed, Messages: []string{"The hours are given."}, Summary: "The agent states the hours."}
	for _, c := range []struct {
		name            string
		budget          *LatencyBudget
		turns, first    []int64
		wantStatus      string
		wantSummary     string
		wantBreaches    []BudgetBreach
		wantMessageTail []string
	}{
		{name: "no budget", budget: nil, turns: []int64{9000}, first: []int64{9000},
			wantStatus: RunPassed, wantSummary: "The agent states the hours."},
		{name: "an empty budget checks nothing", budget: &LatencyBudget{}, turns: []int64{9000}, first: []int64{9000},
			wantStatus: RunPassed, wantSummary: "The agent states the hours."},
		{name: "within both, at the bound", budget: &LatencyBudget{FirstTokenP95Ms: ms(800), TurnP95Ms: ms(2500)},
			turns: []int64{2500, 1200}, first: []int64{800, 300},
			wantStatus: RunPassed, wantSummary: "The agent states the hours."},
		{name: "first token over", budget: &LatencyBudget{FirstTokenP95Ms: ms(800), TurnP95Ms: ms(2500)},
			turns: []int64{2000, 1200}, first: []int64{912, 300},
			wantStatus:      RunFailed,
			wantSummary:     "Time to first token p95 912 ms is over the test's budget of 800 ms. The agent states the hours.",
			wantBreaches:    []BudgetBreach{{BudgetFirstTokenP95, 912, 800}},
			wantMessageTail: []string{"Time to first token p95 912 ms is over the test's budget of 800 ms."}},
		{name: "both over name both, first token first", budget: &LatencyBudget{FirstTokenP95Ms: ms(800), TurnP95Ms: ms(2500)},
			turns: []int64{2710}, first: []int64{912},
			wantStatus: RunFailed,
			wantSummary: "Time to first token p95 912 ms is over the test's budget of 800 ms. " +
				"Whole turn time p95 2710 ms is over the test's budget of 2500 ms. The agent states the hours.",
			wantBreaches: []BudgetBreach{{BudgetFirstTokenP95, 912, 800}, {BudgetTurnP95, 2710, 2500}},
			wantMessageTail: []string{"Time to first token p95 912 ms is over the test's budget of 800 ms.",
				"Whole turn time p95 2710 ms is over the test's budget of 2500 ms."}},
		{name: "only the turn bound set", budget: &LatencyBudget{TurnP95Ms: ms(100)}, turns: []int64{150}, first: []int64{9000},
			wantStatus:      RunFailed,
			wantSummary:     "Whole turn time p95 150 ms is over the test's budget of 100 ms. The agent states the hours.",
			wantBreaches:    []BudgetBreach{{BudgetTurnP95, 150, 100}},
			wantMessageTail: []string{"Whole turn time p95 150 ms is over the test's budget of 100 ms."}},
		{name: "one slow turn in twenty is under the p95", budget: &LatencyBudget{FirstTokenP95Ms: ms(500)},
			turns: slices.Repeat([]int64{600}, 20), first: append(slices.Repeat([]int64{400}, 19), 5000),
			wantStatus: RunPassed, wantSummary: "The agent states the hours."},
		{name: "two slow turns in twenty are not", budget: &LatencyBudget{FirstTokenP95Ms: ms(500)},
			turns: slices.Repeat([]int64{600}, 20), first: append(slices.Repeat([]int64{400}, 18), 5000, 700),
			wantStatus:      RunFailed,
			wantSummary:     "Time to first token p95 700 ms is over the test's budget of 500 ms. The agent states the hours.",
			wantBreaches:    []BudgetBreach{{BudgetFirstTokenP95, 700, 500}},
			wantMessageTail: []string{"Time to first token p95 700 ms is over the test's budget of 500 ms."}},
		{name: "no measured turn (all from the cache) breaks nothing", budget: &LatencyBudget{FirstTokenP95Ms: ms(1), TurnP95Ms: ms(1)},
			wantStatus: RunPassed, wantSummary: "The agent states the hours."},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := HoldToLatencyBudget(judged, c.budget, c.turns, c.first)
			if got.Status != c.wantStatus || got.Summary != c.wantSummary || !reflect.DeepEqual(got.Breaches, c.wantBreaches) {
				t.Fatalf("got %+v\nwant status %s, summary %q, breaches %v", got, c.wantStatus, c.wantSummary, c.wantBreaches)
			}
			want := append([]string{"The hours are given."}, c.wantMessageTail...)
			if !reflect.DeepEqual(got.Messages, want) {
				t.Fatalf("messages %q, want %q", got.Messages, want)
			}
		})
	}
	if len(judged.Messages) != 1 || cap(judged.Messages) != 1 {
		t.Fatalf("the judged outcome was changed: %+v", judged)
	}
}

// A run its judge failed stays failed, and a budget it broke is said
// too; the judge's result is not the rule's to change.
func TestAFailedRunOverBudgetSaysBoth(t *testing.T) {
	got := HoldToLatencyBudget(Outcome{Status: RunFailed, Summary: "The hours are missing."},
		&LatencyBudget{FirstTokenP95Ms: ms(100)}, []int64{400}, []int64{312})
	if got.Status != RunFailed || got.Summary != "Time to first token p95 312 ms is over the test's budget of 100 ms. The hours are missing." {
		t.Fatalf("%+v", got)
	}
}
