package judgeeval

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Goals are the bar a judge is held to.
type Goals struct {
	Agreement float64       // at least
	Kappa     float64       // at least
	FalsePass float64       // at most: false passes / failing cases
	P95       time.Duration // under: time per decision (0: no goal)
	Memory    int64         // at most: bytes the judge's resources add (0: no goal)
}

// Bar is the platform's bar for a judge: agreement with people ≥ 0.85,
// κ ≥ 0.70, false passes ≤ 5% of failing replies; and, for a judge that
// runs in process, a decision under 5 ms at p95 in at most 150 MiB.
var Bar = Goals{Agreement: 0.85, Kappa: 0.70, FalsePass: 0.05, P95: 5 * time.Millisecond, Memory: 150 << 20}

// AgreesWithPeople reports whether f meets the quality goals (agreement,
// κ and false passes), and the ones it misses.
func (g Goals) AgreesWithPeople(f Figures) (ok bool, missed []string) {
	if f.Agreement.Value < g.Agreement {
		missed = append(missed, fmt.Sprintf("agreement %.3f < %.2f", f.Agreement.Value, g.Agreement))
	}
	if !f.KappaOK || f.Kappa < g.Kappa {
		missed = append(missed, fmt.Sprintf("kappa %.3f < %.2f", f.Kappa, g.Kappa))
	}
	if f.Failing == 0 || f.FalsePass.Value > g.FalsePass {
		missed = append(missed, fmt.Sprintf("false passes %.3f of failing cases > %.2f", f.FalsePass.Value, g.FalsePass))
	}
	return len(missed) == 0, missed
}

func met(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}

func rate(r domain.Rate) string {
	if r.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f [%.3f-%.3f] (%d/%d)", r.Value, r.Low, r.High, r.Count, r.N)
}

func kappa(f Figures) string {
	if !f.KappaOK {
		return "undefined"
	}
	return fmt.Sprintf("%.3f [%.3f-%.3f]", f.Kappa, f.KappaLow, f.KappaHigh)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// mib shows b in MiB; a GC can leave less live than before, shown as 0.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(max(b, 0))/(1<<20)) }

// Write prints the report against the goals, each figure with its goal
// and MET or NOT MET, then the figures of each category.
func (r Report) Write(w io.Writer, g Goals) {
	f := r.Overall
	fmt.Fprintf(w, "judge %s on %s: %d cases (%d pass, %d fail by people)\n", r.Judge, r.Set, f.Cases, f.Passing, f.Failing)
	fmt.Fprintf(w, "  agreement    %s  goal >= %.2f %s\n", rate(f.Agreement), g.Agreement, met(f.Agreement.Value >= g.Agreement))
	fmt.Fprintf(w, "  kappa        %s  goal >= %.2f %s\n", kappa(f), g.Kappa, met(f.KappaOK && f.Kappa >= g.Kappa))
	fmt.Fprintf(w, "  false pass   %s of failing cases  goal <= %.2f %s\n", rate(f.FalsePass), g.FalsePass, met(f.Failing > 0 && f.FalsePass.Value <= g.FalsePass))
	fmt.Fprintf(w, "  true pass    %s   true fail %s\n", rate(f.TruePass), rate(f.TrueFail))
	fmt.Fprintf(w, "  unknown      %d (judge errors %d), each counted a disagreement\n", f.Unknown, r.Errors)
	fmt.Fprintf(w, "  decided      %s of the cases; agreement on those %s\n", rate(f.Decided), rate(f.DecidedAgreement))
	speedGoal, memGoal := "no goal (not in process)", "no goal (not in process)"
	if g.P95 > 0 {
		speedGoal = fmt.Sprintf("goal p95 < %s %s", ms(g.P95), met(r.P95 < g.P95))
	}
	if g.Memory > 0 {
		memGoal = fmt.Sprintf("goal <= %s %s", mib(g.Memory), met(r.MemoryAdded() <= g.Memory))
	}
	fmt.Fprintf(w, "  decision     p50 %s, p95 %s (first %s)  %s\n", ms(r.P50), ms(r.P95), ms(r.First), speedGoal)
	fmt.Fprintf(w, "  memory added %s (live heap %s, from the OS %s)  %s\n", mib(r.MemoryAdded()), mib(r.HeapAdded), mib(r.SysAdded), memGoal)
	fmt.Fprintf(w, "  %-11s %5s  %-28s %-22s %-26s %s\n", "category", "cases", "agreement", "kappa", "false pass", "unknown")
	for _, c := range r.Categories {
		fmt.Fprintf(w, "  %-11s %5d  %-28s %-22s %-26s %d\n", c.Category, c.Cases, rate(c.Agreement), kappa(c.Figures), rate(c.FalsePass), c.Unknown)
	}
}

// WriteDisagreements lists the cases where the judge and people differ.
func (r Report) WriteDisagreements(w io.Writer) {
	for _, d := range r.Disagreements() {
		why := d.Summary
		if d.Err != nil {
			why = "error: " + d.Err.Error()
		}
		fmt.Fprintf(w, "  %-28s %-10s people %s, judge %s: %q (conditions: %s) judge said: %s\n",
			d.Case.ID, d.Case.Category, d.Case.Label, d.Verdict, d.Case.Reply, strings.Join(d.Case.Conditions, " / "), why)
	}
}
