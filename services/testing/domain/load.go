package domain

import (
	"cmp"
	"fmt"
	"slices"
)

// Load tests: an invocation that plays its test's agent turn for many
// simulated callers at once, in a ramp of steps.

// JobLoad is the kind of a load test step's job (RunJob.kind).
const JobLoad = "load"

// Load test limits.
const (
	// LoadMaxSteps bounds the steps of one load test.
	LoadMaxSteps = 10
	// LoadMaxTurnsPerCaller bounds the turns each caller plays.
	LoadMaxTurnsPerCaller = 20
	// LoadDefaultMaxCallers is the operator's default bound on one step's
	// callers (VOICEAI_MAX_LOAD_CALLERS).
	LoadDefaultMaxCallers = 500
	// LoadCallersPerJob bounds the callers one job of a step holds: a
	// step's callers are spread over jobs that any runner takes, each
	// caller a goroutine waiting on the endpoint, not a runner slot.
	LoadCallersPerJob = 50
)

// LoadJobs splits a step's callers into jobs: at most LoadCallersPerJob
// callers each, and at least two jobs once there are two callers, so
// even a small step can be shared by two runners. sizes[i] is job i's
// callers; they add up to callers.
func LoadJobs(callers int) []int {
	if callers <= 0 {
		return nil
	}
	jobs := (callers + LoadCallersPerJob - 1) / LoadCallersPerJob
	if callers >= 2 {
		jobs = max(jobs, 2)
	}
	sizes := make([]int, jobs)
	for i := range sizes {
		sizes[i] = callers / jobs
		if i < callers%jobs {
			sizes[i]++
		}
	}
	return sizes
}

// LoadSample is one job's measurements: per answered turn, its first
// token, its whole turn and the platform's own time around it (all in
// microseconds), and its failed turns counted by reason.
type LoadSample struct {
	Callers      int
	FirstTokenUs []int64
	TurnUs       []int64
	OverheadUs   []int64
	Failures     map[string]int64
	// StartedMs and FinishedMs are when the job's callers began calling
	// together and when its last ended (0: not known).
	StartedMs, FinishedMs int64
}

// LoadStep is one finished step's figures. Percentiles are nearest-rank
// over the turns the endpoint answered; a step none of whose turns was
// answered has them all 0.
type LoadStep struct {
	Callers         int
	Turns           int64 // turns played (answered and failed)
	FailedTurns     int64
	Failures        []LoadFailure // by count, most first
	FirstTokenP50Ms int64
	FirstTokenP95Ms int64
	FirstTokenMaxMs int64
	TurnP50Ms       int64
	TurnP95Ms       int64
	TurnMaxMs       int64
	OverheadP50Us   int64
	OverheadP95Us   int64
	MetBudget       bool
	JobsReported    int
	Jobs            int
	// PeakCallers is the most callers whose jobs were calling at once
	// (0: not known): fewer than Callers when the runners could not start
	// the step's jobs together, so the step did not put all its callers on
	// the endpoint at once.
	PeakCallers int
}

// LoadFailure is how many turns failed for one reason.
type LoadFailure struct {
	Reason string
	Count  int64
}

// LoadMissingReason is the failure of the turns of a job that stored no
// samples (given up after its runners kept failing).
const LoadMissingReason = "the job holding these callers reported nothing (its runners stopped or it was given up)"

// SummarizeLoadStep aggregates the samples of a step's jobs. jobs is how
// many were queued: the callers of a job that reported nothing count as
// failed turns, each caller turnsPerCaller of them. The step meets the
// budget when its p95s are within it and none of its turns failed.
func SummarizeLoadStep(callers, jobs, turnsPerCaller int, samples []LoadSample, budget *LatencyBudget) LoadStep {
	s := LoadStep{Callers: callers, Jobs: jobs, JobsReported: len(samples)}
	var first, turn, over []int64
	failures := map[string]int64{}
	reported := 0
	for _, x := range samples {
		first = append(first, x.FirstTokenUs...)
		turn = append(turn, x.TurnUs...)
		over = append(over, x.OverheadUs...)
		for r, n := range x.Failures {
			failures[r] += n
			s.FailedTurns += n
		}
		reported += x.Callers
	}
	if missing := callers - reported; missing > 0 && len(samples) < jobs {
		failures[LoadMissingReason] += int64(missing * turnsPerCaller)
		s.FailedTurns += int64(missing * turnsPerCaller)
	}
	s.Turns = int64(len(turn)) + s.FailedTurns
	for r, n := range failures {
		s.Failures = append(s.Failures, LoadFailure{Reason: r, Count: n})
	}
	slices.SortFunc(s.Failures, func(a, b LoadFailure) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	ms := func(us []int64, p float64) int64 {
		v, _ := NearestRankPercentile(us, p)
		return (v + 500) / 1000
	}
	s.FirstTokenP50Ms, s.FirstTokenP95Ms, s.FirstTokenMaxMs = ms(first, 0.5), ms(first, 0.95), ms(first, 1)
	s.TurnP50Ms, s.TurnP95Ms, s.TurnMaxMs = ms(turn, 0.5), ms(turn, 0.95), ms(turn, 1)
	s.OverheadP50Us, _ = NearestRankPercentile(over, 0.5)
	s.OverheadP95Us, _ = NearestRankPercentile(over, 0.95)
	s.MetBudget = s.FailedTurns == 0 && len(turn) > 0 && len(s.BudgetBreaches(budget)) == 0
	s.PeakCallers = PeakCallers(samples)
	return s
}

// PeakCallers is the most callers whose jobs were calling at once: a sweep
// over the jobs' spans, a job that ended as another began not counted with
// it. 0 when a job's span is not known.
func PeakCallers(samples []LoadSample) int {
	type edge struct {
		at      int64
		callers int
	}
	edges := make([]edge, 0, 2*len(samples))
	for _, x := range samples {
		if x.StartedMs == 0 || x.FinishedMs < x.StartedMs {
			return 0
		}
		edges = append(edges, edge{x.StartedMs, x.Callers}, edge{x.FinishedMs, -x.Callers})
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.callers, b.callers)) })
	peak, now := 0, 0
	for _, e := range edges {
		now += e.callers
		peak = max(peak, now)
	}
	return peak
}

// BudgetBreaches are the budgets the step's p95s go over.
func (s LoadStep) BudgetBreaches(b *LatencyBudget) []BudgetBreach {
	if b == nil {
		return nil
	}
	var out []BudgetBreach
	if b.FirstTokenP95Ms != nil && s.FirstTokenP95Ms > *b.FirstTokenP95Ms {
		out = append(out, BudgetBreach{Metric: BudgetFirstTokenP95, MeasuredMs: s.FirstTokenP95Ms, BudgetMs: *b.FirstTokenP95Ms})
	}
	if b.TurnP95Ms != nil && s.TurnP95Ms > *b.TurnP95Ms {
		out = append(out, BudgetBreach{Metric: BudgetTurnP95, MeasuredMs: s.TurnP95Ms, BudgetMs: *b.TurnP95Ms})
	}
	return out
}

// BrokeBudgetAt is the index of the first step that did not meet its
// budget; false when every step did.
func BrokeBudgetAt(steps []LoadStep) (int, bool) {
	for i, s := range steps {
		if !s.MetBudget {
			return i, true
		}
	}
	return 0, false
}

// CheckLoadSteps checks a load test's steps: 1 to LoadMaxSteps of them,
// each 1..maxCallers. It answers one problem per bad step (index, text).
func CheckLoadSteps(steps []int, maxCallers int) (problems []string, at []int) {
	for i, n := range steps {
		if n < 1 || n > maxCallers {
			problems = append(problems, fmt.Sprintf("A step is 1 to %d simultaneous callers (VOICEAI_MAX_LOAD_CALLERS)", maxCallers))
			at = append(at, i)
		}
	}
	return problems, at
}
