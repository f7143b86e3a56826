package domain

import (
	"hash/fnv"
	"math"
)

// Wilson is the Wilson score interval of successes out of n at 95%
// confidence: sound at small counts and at 0% or 100%. 0, 1 when n is 0:
// nothing is known of a rate not yet seen once.
func Wilson(successes, n int64) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	nf, p := float64(n), float64(successes)/float64(n)
	z2 := z95 * z95
	centre := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z95 / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

// Confusion counts labelled verdicts of a judge against what reviewers
// said was right, pass meaning the condition was met ("success").
type Confusion struct {
	TruePass  int64 // judge passed, reviewers say pass
	FalsePass int64 // judge passed, reviewers say fail
	FalseFail int64 // judge failed, reviewers say pass
	TrueFail  int64 // judge failed, reviewers say fail
}

// N is the number of labelled verdicts.
func (c Confusion) N() int64 { return c.TruePass + c.FalsePass + c.FalseFail + c.TrueFail }

// Add counts one labelled verdict.
func (c *Confusion) Add(judgePassed, truthPassed bool) {
	switch {
	case judgePassed && truthPassed:
		c.TruePass++
	case judgePassed:
		c.FalsePass++
	case truthPassed:
		c.FalseFail++
	default:
		c.TrueFail++
	}
}

// Agreement is the share of verdicts reviewers found right (observed
// agreement, p_o); 0 without labels.
func (c Confusion) Agreement() float64 {
	if c.N() == 0 {
		return 0
	}
	return float64(c.TruePass+c.TrueFail) / float64(c.N())
}

// Kappa is Cohen's κ of the judge against the reviewers: (p_o − p_e) /
// (1 − p_e), p_e the agreement expected by chance from each side's pass
// rate. ok is false when κ is undefined: without labels, or when both
// sides gave one answer only (each always passed, or always failed).
//
// With one answer on each side, p_e is 1 when it is the same answer
// (κ = 0/0) and 0 when they differ, where the formula gives (0 − 0) / 1
// = 0. That 0 is no measure either: κ corrects the agreement for what
// each side's mix of answers would give by chance, and neither side
// mixed, so there is nothing to correct by; and flipping the one answer
// of one side would turn it into 0/0. Both are left undefined alike.
// (When only one side gave one answer, p_e = p_o and κ is 0, rightly:
// a judge that always says the same tells passes from failures no
// better than chance.)
func (c Confusion) Kappa() (kappa float64, ok bool) {
	judgeOneAnswer := c.TruePass+c.FalsePass == 0 || c.FalseFail+c.TrueFail == 0
	truthOneAnswer := c.TruePass+c.FalseFail == 0 || c.FalsePass+c.TrueFail == 0
	if c.N() == 0 || (judgeOneAnswer && truthOneAnswer) {
		return 0, false
	}
	n := float64(c.N())
	judgePass := float64(c.TruePass+c.FalsePass) / n
	truthPass := float64(c.TruePass+c.FalseFail) / n
	pe := judgePass*truthPass + (1-judgePass)*(1-truthPass) // < 1: a side gave both answers
	return (c.Agreement() - pe) / (1 - pe), true
}

// Rate is a share with its Wilson 95% interval; N 0 means undefined.
type Rate struct {
	Count, N  int64
	Value     float64
	Low, High float64
}

// NewRate is count of n with its interval.
func NewRate(count, n int64) Rate {
	r := Rate{Count: count, N: n}
	if n > 0 {
		r.Value = float64(count) / float64(n)
		r.Low, r.High = Wilson(count, n)
	}
	return r
}

// TruePassRate is the share of runs that should pass which the judge
// passed (sensitivity).
func (c Confusion) TruePassRate() Rate { return NewRate(c.TruePass, c.TruePass+c.FalseFail) }

// TrueFailRate is the share of runs that should fail which the judge
// failed (specificity).
func (c Confusion) TrueFailRate() Rate { return NewRate(c.TrueFail, c.TrueFail+c.FalsePass) }

// FalsePassRate is the share of the judge's passes that reviewers say
// should have failed: how far a green result can be trusted.
func (c Confusion) FalsePassRate() Rate { return NewRate(c.FalsePass, c.TruePass+c.FalsePass) }

// AgreementRate is the agreement with its interval.
func (c Confusion) AgreementRate() Rate { return NewRate(c.TruePass+c.TrueFail, c.N()) }

// Flips counts, over every pair of verdicts the judge gave one transcript,
// the pairs that differ: n verdicts make n(n−1)/2 pairs.
func Flips(results []string) (flipped, pairs int64) {
	for i := range results {
		for j := i + 1; j < len(results); j++ {
			pairs++
			if results[i] != results[j] {
				flipped++
			}
		}
	}
	return flipped, pairs
}

// Sampled reports whether a passed run is in the review sample: a
// deterministic draw (FNV-1a of the workspace and run id) that takes
// about perMille of every thousand, the same runs on every call.
func Sampled(workspaceID, runID string, perMille int) bool {
	h := fnv.New64a()
	_, _ = h.Write([]byte(workspaceID + "\x00" + runID))
	return int(h.Sum64()%1000) < perMille
}
