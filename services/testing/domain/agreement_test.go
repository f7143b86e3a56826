package domain

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Published Wilson intervals: Newcombe (1998), "Two-sided confidence
// intervals for the single proportion", Table I, method 3 (the score
// interval): 81/263 → 0.2553–0.3662, 15/148 → 0.0624–0.1605,
// 0/20 → 0–0.1611, 1/29 → 0.0061–0.1718.
func TestWilsonMatchesNewcombe(t *testing.T) {
	for _, c := range []struct {
		x, n      int64
		low, high float64
	}{{81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}, {0, 20, 0, 0.1611}, {1, 29, 0.0061, 0.1718}} {
		lo, hi := Wilson(c.x, c.n)
		if !near(lo, c.low, 0.00005) || !near(hi, c.high, 0.00005) {
			t.Errorf("Wilson(%d, %d) = %.4f–%.4f, want %.4f–%.4f", c.x, c.n, lo, hi, c.low, c.high)
		}
	}
	if lo, hi := Wilson(0, 0); lo != 0 || hi != 1 {
		t.Errorf("no trials: %v %v", lo, hi)
	}
}

// Cohen's κ on the worked examples of its Wikipedia article ("Cohen's
// kappa", Examples): 20/5/10/15 → p_o 0.70, p_e 0.50, κ 0.40; and the two
// tables with equal agreement and different κ: 45/15/25/15 → 0.1304,
// 25/35/5/35 → 0.2593.
func TestKappaMatchesWorkedExamples(t *testing.T) {
	for _, c := range []struct {
		yy, yn, ny, nn int64
		po, kappa      float64
	}{{20, 5, 10, 15, 0.70, 0.40}, {45, 15, 25, 15, 0.60, 0.1304}, {25, 35, 5, 35, 0.60, 0.2593}} {
		// Rater A is the judge (yes = pass), rater B the reviewers.
		m := Confusion{TruePass: c.yy, FalsePass: c.yn, FalseFail: c.ny, TrueFail: c.nn}
		k, ok := m.Kappa()
		if !ok || !near(m.Agreement(), c.po, 1e-9) || !near(k, c.kappa, 0.00005) {
			t.Errorf("%+v: p_o %.4f κ %.4f (%v), want %.2f %.4f", m, m.Agreement(), k, ok, c.po, c.kappa)
		}
	}
	// Both sides gave one answer only: undefined, whether it is the same
	// answer (p_e = 1) or not (p_e = 0, where the formula gives 0).
	for _, one := range []Confusion{{TruePass: 5}, {TrueFail: 2}, {FalseFail: 1}, {FalsePass: 3}} {
		if k, ok := one.Kappa(); ok {
			t.Errorf("%+v: κ %v of sides that gave one answer each, want undefined", one, k)
		}
	}
	// One side gave one answer, the other both: p_e = p_o, κ 0.
	for _, mixed := range []Confusion{{FalseFail: 1, TrueFail: 1}, {TruePass: 2, FalseFail: 1}, {FalsePass: 1, TrueFail: 3}} {
		if k, ok := mixed.Kappa(); !ok || k != 0 {
			t.Errorf("%+v: κ %v (%v), want 0", mixed, k, ok)
		}
	}
	if _, ok := (Confusion{}).Kappa(); ok {
		t.Error("κ without labels must be undefined")
	}
}

func TestConfusionRates(t *testing.T) {
	var m Confusion
	for _, v := range [][2]bool{{true, true}, {true, true}, {true, false}, {false, true}, {false, false}, {false, false}, {false, false}} {
		m.Add(v[0], v[1])
	}
	if m != (Confusion{TruePass: 2, FalsePass: 1, FalseFail: 1, TrueFail: 3}) {
		t.Fatalf("counts %+v", m)
	}
	if r := m.TruePassRate(); r.Count != 2 || r.N != 3 || !near(r.Value, 2.0/3, 1e-12) {
		t.Errorf("TPR %+v", r)
	}
	if r := m.TrueFailRate(); r.Count != 3 || r.N != 4 || r.Value != 0.75 {
		t.Errorf("TNR %+v", r)
	}
	if r := m.FalsePassRate(); r.Count != 1 || r.N != 3 || !near(r.Value, 1.0/3, 1e-12) {
		t.Errorf("false-pass rate %+v", r)
	}
	if r := m.AgreementRate(); r.Count != 5 || r.N != 7 || r.Low <= 0 || r.High >= 1 || r.Low >= r.Value || r.High <= r.Value {
		t.Errorf("agreement %+v", r)
	}
	if r := NewRate(0, 0); r.Value != 0 || r.Low != 0 || r.High != 0 {
		t.Errorf("empty rate %+v", r)
	}
}

func TestFlips(t *testing.T) {
	for _, c := range []struct {
		votes         []string
		flipped, pair int64
	}{{nil, 0, 0}, {[]string{"failure"}, 0, 0}, {[]string{"failure", "failure"}, 0, 1},
		{[]string{"failure", "success", "success"}, 2, 3}} {
		if f, p := Flips(c.votes); f != c.flipped || p != c.pair {
			t.Errorf("%v: %d of %d, want %d of %d", c.votes, f, p, c.flipped, c.pair)
		}
	}
}

func TestSampledIsDeterministicAndNearItsRate(t *testing.T) {
	in := 0
	for i := range 10000 {
		id := "trun_x_" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		a, b := Sampled("ws", id, 100), Sampled("ws", id, 100)
		if a != b {
			t.Fatalf("%s drawn differently", id)
		}
		if a {
			in++
		}
	}
	if in < 800 || in > 1200 { // 10% of 10,000, well within chance
		t.Fatalf("%d of 10000 sampled at 10%%", in)
	}
	if Sampled("ws", "r", 0) || !Sampled("ws", "r", 1000) {
		t.Fatal("0 takes none, 1000 takes all")
	}
}
