package judgeeval

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// Decision is a judge's verdict on one case.
type Decision struct {
	Case    Case
	Verdict string // Pass, Fail or "unknown"
	Summary string // the judge's own words
	Err     error  // the judge gave no verdict (counted unknown)
	Took    time.Duration
}

// Agrees reports whether the judge gave the label's verdict.
func (d Decision) Agrees() bool { return d.Verdict == d.Case.Label }

// CategoryFigures are the figures of one category.
type CategoryFigures struct {
	Category string
	Figures
}

// Report is a judge measured on a set.
type Report struct {
	Judge      string // provider/model
	Set        string
	Overall    Figures
	Categories []CategoryFigures // in the order of Categories, those present
	Errors     int               // decisions the judge failed to make (in Unknown)
	// P50 and P95 are nearest-rank percentiles of the time per decision;
	// First is the first decision's, which pays for loading what the
	// judge needs (it is in the percentiles too).
	P50, P95, First time.Duration
	// HeapAdded is what the first decision left live on the heap (after a
	// GC, before and after it): the judge's resources; SysAdded is what the
	// runtime took from the OS meanwhile. MemoryAdded is the larger.
	HeapAdded, SysAdded int64
	Decisions           []Decision // in the set's order
}

// MemoryAdded is the memory the judge's resources add, in bytes.
func (r Report) MemoryAdded() int64 { return max(r.HeapAdded, r.SysAdded, 0) }

// Disagreements are the decisions that differ from the label, unknowns
// included.
func (r Report) Disagreements() []Decision {
	var out []Decision
	for _, d := range r.Decisions {
		if !d.Agrees() {
			out = append(out, d)
		}
	}
	return out
}

// Options tune a run.
type Options struct {
	// Parallel is how many decisions are asked at once after the first
	// (1 when zero): a remote judge is slow one at a time. Each decision
	// is still timed alone.
	Parallel int
}

// Input is what the judge is asked on a case: its conditions, the reply
// as the agent's turn, the caller's message as the conversation before.
func Input(c Case) runner.JudgeInput {
	in := runner.JudgeInput{Conditions: c.Conditions, Reply: runner.Turn{Role: "agent", Text: c.Reply}}
	if c.User != "" {
		in.Transcript = []runner.Turn{{Role: "user", Text: c.User}}
	}
	return in
}

func decide(ctx context.Context, judge runner.Model, c Case) Decision {
	start := time.Now()
	v, _, err := judge.Judge(ctx, Input(c))
	d := Decision{Case: c, Took: time.Since(start), Summary: v.Summary, Err: err, Verdict: domain.ConditionUnknown}
	if err == nil {
		switch v.Result {
		case domain.ConditionSuccess:
			d.Verdict = Pass
		case domain.ConditionFailure:
			d.Verdict = Fail
		}
	}
	return d
}

// Run asks judge for a verdict on every case and scores them. It fails
// only when ctx ends first; a judge's error is an unknown verdict.
func Run(ctx context.Context, judge runner.Model, set string, cases []Case, opt Options) (Report, error) {
	r := Report{Judge: judge.Provider() + "/" + judge.ModelName(), Set: set, Decisions: make([]Decision, len(cases))}
	if len(cases) == 0 {
		return r, nil
	}
	// The first decision alone, between two collections: what it leaves
	// live is what the judge loaded to decide.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r.Decisions[0] = decide(ctx, judge, cases[0])
	runtime.GC()
	runtime.ReadMemStats(&after)
	r.HeapAdded = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	r.SysAdded = int64(after.Sys) - int64(before.Sys)
	r.First = r.Decisions[0].Took

	next := make(chan int)
	var wg sync.WaitGroup
	for range max(opt.Parallel, 1) {
		wg.Go(func() {
			for i := range next {
				r.Decisions[i] = decide(ctx, judge, cases[i])
			}
		})
	}
	for i := 1; i < len(cases) && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return r, err
	}
	r.score()
	return r, nil
}

// score fills the figures and percentiles from the decisions.
func (r *Report) score() {
	var all Tally
	byCategory := map[string]*Tally{}
	took := make([]time.Duration, 0, len(r.Decisions))
	for _, d := range r.Decisions {
		all.Add(d.Verdict, d.Case.Passes())
		if byCategory[d.Case.Category] == nil {
			byCategory[d.Case.Category] = &Tally{}
		}
		byCategory[d.Case.Category].Add(d.Verdict, d.Case.Passes())
		if d.Err != nil {
			r.Errors++
		}
		took = append(took, d.Took)
	}
	r.Overall = all.Figures()
	for _, c := range Categories {
		if t := byCategory[c]; t != nil {
			r.Categories = append(r.Categories, CategoryFigures{Category: c, Figures: t.Figures()})
		}
	}
	r.P50, r.P95 = Percentile(took, 0.50), Percentile(took, 0.95)
}

// Percentile is the nearest-rank percentile p (0 < p ≤ 1) of ds; 0 when
// ds is empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(ds))
	rank := int(math.Ceil(p*float64(len(sorted)) - 1e-9)) // 0.95*20 is 19.000000000000004
	return sorted[min(max(rank, 1), len(sorted))-1]
}
