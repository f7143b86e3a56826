package domain

import "math"

// Reliability is what a test's repeated runs say about it: how often it
// passes, how sure that figure is, and how likely k runs in a row pass.
type Reliability struct {
	Runs, Passed int64
	PassRate     float64 // Passed / Runs; 0 without runs
	// Low and High bound the true pass rate with 95% confidence (the
	// Wilson score interval, sound at small counts and at 0% or 100%,
	// where the normal approximation collapses to a point); 0 and 1
	// without runs: nothing is known yet.
	Low, High float64
	// PassHatK is pass^k: the chance that K runs in a row all pass,
	// estimated without bias as C(Passed, K) / C(Runs, K) (the tau-bench
	// measure). A test passing 9 runs in 10 has pass^3 = 0.70: flaky.
	K        int
	PassHatK float64
}

// z95 is the normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// NewReliability computes the figures for passed of runs; k is clamped
// to 1..runs. Without runs the interval is Wilson's for none, [0, 1].
func NewReliability(passed, runs int64, k int) Reliability {
	if runs <= 0 {
		r := Reliability{K: max(k, 1)}
		r.Low, r.High = Wilson(0, 0)
		return r
	}
	r := Reliability{Runs: runs, Passed: passed}
	r.PassRate = float64(passed) / float64(runs)
	r.Low, r.High = Wilson(passed, runs)
	r.K = min(max(k, 1), int(runs))
	// C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i), computed as a product so
	// large counts do not overflow.
	r.PassHatK = 1
	for i := range int64(r.K) {
		r.PassHatK *= math.Max(0, float64(passed-i)) / float64(runs-i)
	}
	return r
}
