package domain

import (
	"reflect"
	"testing"
)

func TestLoadJobsSpreadCallers(t *testing.T) {
	for callers, want := range map[int][]int{
		1: {1}, 2: {1, 1}, 10: {5, 5}, 51: {26, 25}, 500: {50, 50, 50, 50, 50, 50, 50, 50, 50, 50}, 101: {34, 34, 33},
	} {
		if got := LoadJobs(callers); !reflect.DeepEqual(got, want) {
			t.Errorf("LoadJobs(%d) = %v, want %v", callers, got, want)
		}
	}
}

func TestSummarizeLoadStep(t *testing.T) {
	us := func(ms ...int64) []int64 {
		out := make([]int64, len(ms))
		for i, m := range ms {
			out[i] = m * 1000
		}
		return out
	}
	ft, turn := int64(100), int64(1000)
	budget := &LatencyBudget{FirstTokenP95Ms: &ft, TurnP95Ms: &turn}
	a := LoadSample{Callers: 2, FirstTokenUs: us(50, 60), TurnUs: us(200, 220), OverheadUs: []int64{300, 900}}
	b := LoadSample{Callers: 2, FirstTokenUs: us(70), TurnUs: us(240), OverheadUs: []int64{400},
		Failures: map[string]int64{"agent endpoint unreachable: 503": 1}}
	s := SummarizeLoadStep(4, 2, 1, []LoadSample{a, b}, budget)
	if s.Turns != 4 || s.FailedTurns != 1 || s.FirstTokenP50Ms != 60 || s.FirstTokenP95Ms != 70 || s.FirstTokenMaxMs != 70 ||
		s.TurnP50Ms != 220 || s.TurnP95Ms != 240 || s.OverheadP50Us != 400 || s.OverheadP95Us != 900 {
		t.Fatalf("step = %+v", s)
	}
	if s.MetBudget {
		t.Fatal("a step with a failed turn met its budget")
	}
	if got := s.Failures; len(got) != 1 || got[0].Count != 1 {
		t.Fatalf("failures = %+v", got)
	}

	fine := SummarizeLoadStep(2, 1, 1, []LoadSample{a}, budget)
	if !fine.MetBudget {
		t.Fatalf("within budget, no failure: %+v", fine)
	}
	slow := SummarizeLoadStep(2, 1, 1, []LoadSample{{Callers: 2, FirstTokenUs: us(90, 130), TurnUs: us(200, 300)}}, budget)
	if slow.MetBudget || len(slow.BudgetBreaches(budget)) != 1 || slow.BudgetBreaches(budget)[0].MeasuredMs != 130 {
		t.Fatalf("first token p95 130 over 100: %+v", slow)
	}
	if at, ok := BrokeBudgetAt([]LoadStep{fine, fine, slow}); !ok || at != 2 {
		t.Fatalf("broke at %d %v", at, ok)
	}
	if _, ok := BrokeBudgetAt([]LoadStep{fine}); ok {
		t.Fatal("no step broke")
	}

	// A job that reported nothing: its callers' turns failed.
	lost := SummarizeLoadStep(4, 2, 3, []LoadSample{a}, nil)
	if lost.FailedTurns != 6 || lost.Turns != 8 || lost.Failures[0].Reason != LoadMissingReason || lost.MetBudget {
		t.Fatalf("lost job: %+v", lost)
	}
}

// A step's peak is the most callers whose jobs were calling at once: two
// jobs together count both, a job started once another ended does not add
// to it, and a job whose span is not known leaves the peak unknown.
func TestPeakCallers(t *testing.T) {
	job := func(callers int, from, to int64) LoadSample {
		return LoadSample{Callers: callers, StartedMs: from, FinishedMs: to}
	}
	for _, c := range []struct {
		name    string
		samples []LoadSample
		want    int
	}{
		{"together", []LoadSample{job(50, 1000, 5000), job(50, 1010, 4000)}, 100},
		{"one after the other", []LoadSample{job(50, 1000, 5000), job(50, 5000, 9000)}, 50},
		{"some overlap", []LoadSample{job(50, 1000, 5000), job(50, 1000, 5000), job(40, 4000, 8000), job(40, 6000, 9000)}, 140},
		{"a span not known", []LoadSample{job(50, 1000, 5000), {Callers: 50}}, 0},
	} {
		if got := PeakCallers(c.samples); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
