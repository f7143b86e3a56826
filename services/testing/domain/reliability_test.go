package domain

import (
	"math"
	"testing"
)

func TestReliability(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.0005 }
	for _, c := range []struct {
		passed, runs int64
		k            int
		rate, lo, hi float64
		passK        float64
		wantK        int
	}{
		// Wilson intervals checked against published tables (e.g. 9/10:
		// 0.596–0.982; 0/10: 0–0.278; 10/10: 0.722–1).
		{9, 10, 3, 0.9, 0.596, 0.982, 9.0 / 10 * 8 / 9 * 7 / 8, 3},
		{0, 10, 3, 0, 0, 0.278, 0, 3},
		{10, 10, 3, 1, 0.722, 1, 1, 3},
		{1, 2, 5, 0.5, 0.095, 0.905, 0, 2}, // k clamped to the runs there are
		{50, 100, 1, 0.5, 0.404, 0.596, 0.5, 1},
	} {
		r := NewReliability(c.passed, c.runs, c.k)
		if !near(r.PassRate, c.rate) || !near(r.Low, c.lo) || !near(r.High, c.hi) || !near(r.PassHatK, c.passK) || r.K != c.wantK {
			t.Errorf("%d/%d k=%d: %+v; want rate %.3f [%.3f, %.3f] pass^%d %.4f", c.passed, c.runs, c.k, r, c.rate, c.lo, c.hi, c.wantK, c.passK)
		}
	}
	// No finished run: nothing is known, the interval is all of [0, 1].
	if r := NewReliability(0, 0, 3); r.Runs != 0 || r.PassRate != 0 || r.PassHatK != 0 || r.Low != 0 || r.High != 1 {
		t.Errorf("no runs: %+v; want rate 0 in [0, 1]", r)
	}
	// Large counts: no overflow, and pass^k of a perfect record stays 1.
	if r := NewReliability(250_000, 250_000, 10); r.PassHatK != 1 || r.Low < 0.9999 {
		t.Errorf("250,000 passes: %+v", r)
	}
}
