package judgeeval

import (
	"math"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Tally counts a judge's verdicts against the labels. A verdict is pass
// ("success"), fail ("failure") or unknown (anything else, or no verdict
// at all); the decided ones go in Confusion, the unknown ones apart.
type Tally struct {
	Confusion     domain.Confusion // decided verdicts only
	UnknownOnPass int64            // unknown where people said pass
	UnknownOnFail int64            // unknown where people said fail
}

// Add counts one verdict (Pass, Fail or anything else: unknown) on a
// case people labelled truthPass.
func (t *Tally) Add(verdict string, truthPass bool) {
	switch {
	case verdict == Pass || verdict == Fail:
		t.Confusion.Add(verdict == Pass, truthPass)
	case truthPass:
		t.UnknownOnPass++
	default:
		t.UnknownOnFail++
	}
}

// Figures are a judge's scores on a set of cases, each share with its
// Wilson 95% interval.
type Figures struct {
	Cases, Passing, Failing int64 // cases, and how many people passed and failed
	Unknown                 int64 // verdicts neither pass nor fail
	// Agreement is the share of cases where the judge gave the label's
	// verdict; an unknown is a disagreement.
	Agreement domain.Rate
	// Kappa is Cohen's κ with unknowns as disagreements; KappaOK false
	// when undefined (both sides gave one answer only). KappaLow and
	// KappaHigh map the agreement's interval through κ at the observed
	// chance agreement: an approximation, as κ has no Wilson interval.
	Kappa               float64
	KappaOK             bool
	KappaLow, KappaHigh float64
	TruePass            domain.Rate // judge passed / people passed
	TrueFail            domain.Rate // judge failed / people failed
	// FalsePass is false passes / the cases people failed, as the issue
	// that asked for this measure defines it: how often a failing reply
	// slips through. It is not domain.Confusion's FalsePassRate, which
	// divides by the judge's passes (how far a green result is trusted).
	// An unknown is not a pass, so it is not a false pass.
	FalsePass domain.Rate
	// Decided is the share of cases the judge decided (not unknown), and
	// DecidedAgreement its agreement on those alone: how far a verdict it
	// gives can be trusted, the unknowns going to a person.
	Decided, DecidedAgreement domain.Rate
}

// Figures scores the tally.
func (t Tally) Figures() Figures {
	c := t.Confusion
	// scored counts an unknown as the wrong verdict: a disagreement.
	scored := c
	scored.FalseFail += t.UnknownOnPass
	scored.FalsePass += t.UnknownOnFail
	f := Figures{
		Cases:     scored.N(),
		Passing:   scored.TruePass + scored.FalseFail,
		Failing:   scored.TrueFail + scored.FalsePass,
		Unknown:   t.UnknownOnPass + t.UnknownOnFail,
		Agreement: scored.AgreementRate(),
		TruePass:  scored.TruePassRate(),
		TrueFail:  scored.TrueFailRate(),
	}
	f.FalsePass = domain.NewRate(c.FalsePass, f.Failing)
	f.Decided = domain.NewRate(c.N(), f.Cases)
	f.DecidedAgreement = c.AgreementRate()
	f.Kappa, f.KappaOK = scored.Kappa()
	if f.KappaOK {
		n := float64(scored.N())
		judgePass := float64(scored.TruePass+scored.FalsePass) / n
		truthPass := float64(f.Passing) / n
		pe := judgePass*truthPass + (1-judgePass)*(1-truthPass)
		at := func(po float64) float64 { return math.Max(-1, (po-pe)/(1-pe)) }
		f.KappaLow, f.KappaHigh = at(f.Agreement.Low), at(f.Agreement.High)
	}
	return f
}
