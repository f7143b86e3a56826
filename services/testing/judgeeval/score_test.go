package judgeeval

import (
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 0.00005 }

// A tally worked by hand. Ten cases, five passing and five failing by
// people; the judge: 4 true passes, 2 false passes, 1 false fail, 2 true
// fails and one unknown on a failing case.
//
//	agreement  (4+2)/10 = 0.6; Wilson 6/10 = 0.3127–0.8318 (the standard
//	           table value)
//	κ          the unknown is a disagreement: judge passes 4+2+1 = 7 of 10
//	           (0.7), people 5 of 10 (0.5); p_e = 0.7·0.5 + 0.3·0.5 = 0.5;
//	           κ = (0.6 − 0.5)/(1 − 0.5) = 0.2; its interval at that p_e:
//	           (0.3127 − 0.5)/0.5 = −0.3746, (0.8318 − 0.5)/0.5 = 0.6637
//	true pass  4/5 = 0.8, true fail 2/5 = 0.4
//	false pass 2/5 = 0.4: false passes over failing cases; the unknown is
//	           in the 5 but is not a pass (domain's FalsePassRate would say
//	           2/6 = 0.333, over the judge's passes)
func TestFiguresMatchAHandComputation(t *testing.T) {
	var tally Tally
	for range 4 {
		tally.Add(Pass, true)
	}
	for range 2 {
		tally.Add(Pass, false)
	}
	tally.Add(Fail, true)
	for range 2 {
		tally.Add(Fail, false)
	}
	tally.Add("unknown", false)

	f := tally.Figures()
	if f.Cases != 10 || f.Passing != 5 || f.Failing != 5 || f.Unknown != 1 {
		t.Fatalf("counts: %+v", f)
	}
	for _, c := range []struct {
		name            string
		got, want       float64
		gotLow, wantLow float64
		gotHi, wantHi   float64
	}{
		{"agreement", f.Agreement.Value, 0.6, f.Agreement.Low, 0.3127, f.Agreement.High, 0.8318},
		{"kappa", f.Kappa, 0.2, f.KappaLow, -0.3746, f.KappaHigh, 0.6637},
	} {
		if !near(c.got, c.want) || math.Abs(c.gotLow-c.wantLow) > 0.0001 || math.Abs(c.gotHi-c.wantHi) > 0.0001 {
			t.Errorf("%s = %.4f [%.4f–%.4f], want %.4f [%.4f–%.4f]", c.name, c.got, c.gotLow, c.gotHi, c.want, c.wantLow, c.wantHi)
		}
	}
	if !f.KappaOK {
		t.Error("kappa undefined")
	}
	// Decided: 9 of 10; on those, 4 true passes and 2 true fails agree: 6/9.
	if f.Decided.Count != 9 || f.Decided.N != 10 || f.DecidedAgreement.Count != 6 || f.DecidedAgreement.N != 9 {
		t.Errorf("decided %+v, agreement when decided %+v; want 9/10 and 6/9", f.Decided, f.DecidedAgreement)
	}
	if f.TruePass.Count != 4 || f.TruePass.N != 5 || !near(f.TruePass.Value, 0.8) {
		t.Errorf("true pass %+v, want 4/5", f.TruePass)
	}
	if f.TrueFail.Count != 2 || f.TrueFail.N != 5 || !near(f.TrueFail.Value, 0.4) {
		t.Errorf("true fail %+v, want 2/5", f.TrueFail)
	}
	if f.FalsePass.Count != 2 || f.FalsePass.N != 5 || !near(f.FalsePass.Value, 0.4) {
		t.Errorf("false pass %+v, want 2/5 (over failing cases)", f.FalsePass)
	}
	if d := tally.Confusion.FalsePassRate(); near(d.Value, f.FalsePass.Value) {
		t.Errorf("the issue's false-pass rate should differ from domain's here: both %.3f", d.Value)
	}
	// Wilson 2/5 by hand: centre (0.4 + 1.9208/5)/(1 + 3.8415/5) = 0.4434,
	// half 1.96/1.7683·√(0.048 + 0.03841) = 0.3259 → 0.1176–0.7693.
	if math.Abs(f.FalsePass.Low-0.1176) > 0.0001 || math.Abs(f.FalsePass.High-0.7693) > 0.0001 {
		t.Errorf("false pass interval %.4f–%.4f, want 0.1176–0.7693", f.FalsePass.Low, f.FalsePass.High)
	}
}

// Every case right: agreement 1, κ 1, no false pass. Every verdict
// unknown: nothing agrees, and nothing is a false pass either.
func TestFiguresAtTheEnds(t *testing.T) {
	var right, unknown Tally
	for _, truth := range []bool{true, true, false, false} {
		verdict := Fail
		if truth {
			verdict = Pass
		}
		right.Add(verdict, truth)
		unknown.Add("unknown", truth)
	}
	f := right.Figures()
	if f.Agreement.Value != 1 || !f.KappaOK || !near(f.Kappa, 1) || f.FalsePass.Count != 0 {
		t.Errorf("all right: %+v", f)
	}
	u := unknown.Figures()
	if u.Agreement.Value != 0 || u.Unknown != 4 || u.FalsePass.Count != 0 || u.FalsePass.N != 2 || u.TruePass.Count != 0 {
		t.Errorf("all unknown: %+v", u)
	}
	if !u.KappaOK || !near(u.Kappa, -1) {
		t.Errorf("all unknown, each a disagreement: κ %.3f (ok %v), want -1", u.Kappa, u.KappaOK)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 20; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := Percentile(ds, 0.50); p != 10*time.Millisecond {
		t.Errorf("p50 %s, want 10ms (10th of 20)", p)
	}
	if p := Percentile(ds, 0.95); p != 19*time.Millisecond {
		t.Errorf("p95 %s, want 19ms (19th of 20)", p)
	}
	if p := Percentile(ds[:1], 0.95); p != 20*time.Millisecond {
		t.Errorf("one value: %s", p)
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("no values")
	}
}
