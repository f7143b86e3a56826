package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// parseSteps reads "1,10,50".
func parseSteps(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--steps %q: want callers per step, comma-separated, each at least 1 (e.g. 1,10,50)", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func (a *app) testsLoadCommand() *cobra.Command {
	var agent, test, steps string
	var turns int
	var wait bool
	var timeout, poll time.Duration
	cmd := &cobra.Command{
		Use:   "load --agent <agent_id> --test <test_id> --steps 1,10,50 [--wait]",
		Short: "Run a test as a load test: steps of simultaneous callers, one after another",
		Long: `Runs a test as a load test on an agent: each step is that many simulated callers
at once (each plays the test's agent turn --turns times), steps one after another.

With --wait it follows the load test until its last step, then prints each step:
time to first token and whole turn p50/p95 (ms), the failed turns and why, the
platform's own overhead per turn (p95, µs), and the step at which the agent
stopped meeting its test's latency budget.

Exit codes: 0 every step met the budget (or, without --wait, the load test was
started), 1 a step did not, 2 an error (bad key, unknown agent or test, a step
over the operator's maximum, network, time-out).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := parseSteps(steps)
			if err != nil {
				return err
			}
			c, ctx, cancel, err := a.waitingClient(cmd.Context(), wait, timeout)
			if err != nil {
				return err
			}
			defer cancel()
			var lt wire.LoadTest
			raw, err := c.call(ctx, startLoadTest, []string{agent}, nil, map[string]any{"test_id": test, "steps": ns, "turns_per_caller": turns}, &lt)
			if err != nil {
				return err
			}
			if !wait {
				a.started(raw, "Started load test %s: steps %s of test %s on agent %s.\n", lt.ID, steps, test, agent)
				return nil
			}
			tick := time.NewTicker(poll)
			defer tick.Stop()
			last := -1
			for lt.Status == "running" {
				select {
				case <-tick.C:
				case <-ctx.Done():
					return stoppedWaiting(ctx.Err(), timeout, "load test "+lt.ID)
				}
				if err := a.persist(ctx, "waiting for load test "+lt.ID, false, func() (err error) {
					raw, err = c.call(ctx, getLoadTest, []string{lt.ID}, nil, nil, &lt)
					return err
				}); err != nil {
					return stoppedWaiting(err, timeout, "load test "+lt.ID)
				}
				for _, s := range lt.Steps {
					if s.Status == "completed" && s.Step > last {
						last = s.Step
						fmt.Fprintf(a.stderr, "%s: step %d of %d (%d callers) done\n", lt.ID, s.Step+1, len(lt.Steps), s.Callers)
					}
				}
			}
			if a.json {
				a.printJSON(raw)
			} else {
				a.loadSummary(lt)
			}
			if lt.Status == "cancelled" {
				return fmt.Errorf("load test %s was cancelled", lt.ID)
			}
			if lt.BrokeBudgetAtStep != nil {
				return errTestsFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "agent id (required)")
	f.StringVar(&test, "test", "", "test id whose agent turn the callers play (required)")
	f.StringVar(&steps, "steps", "", "simultaneous callers of each step, comma-separated, e.g. 1,10,50 (required)")
	f.IntVar(&turns, "turns", 1, "agent turns each caller plays, one after another (1-20)")
	f.BoolVar(&wait, "wait", false, "wait for every step; the exit code tells whether each met the budget")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait, give up after this long (exit 2)")
	f.DurationVar(&poll, "poll", 2*time.Second, "with --wait, how often to ask for progress")
	for _, name := range []string{"agent", "test", "steps"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func (a *app) testsLoadResultCommand() *cobra.Command {
	return callCommand(a, "load-result <load_test_id>", "Show a load test: each step's latency, failures and overhead, and where the budget broke", getLoadTest, a.loadSummary)
}

// loadSummary prints a table of the steps, the failures by reason, and
// the step that broke the budget.
func (a *app) loadSummary(lt wire.LoadTest) {
	ms := func(p *wire.Percentiles) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%d / %d", p.P50, p.P95)
	}
	var rows [][]string
	for _, s := range lt.Steps {
		over, budget := "-", "-"
		if s.OverheadUs != nil {
			over = strconv.FormatInt(s.OverheadUs.P95, 10)
		}
		if s.MetBudget != nil {
			budget = map[bool]string{true: "met", false: "BROKEN"}[*s.MetBudget]
		}
		failed := "-"
		if s.Status == "completed" {
			failed = fmt.Sprintf("%d (%.1f%%)", s.FailedTurns, 100*s.FailedShare)
		}
		callers := strconv.Itoa(s.Callers)
		if s.PeakCallers != nil && *s.PeakCallers < s.Callers {
			callers += fmt.Sprintf(" (%d at once)", *s.PeakCallers) // the runners could not start them all together
		}
		rows = append(rows, []string{strconv.Itoa(s.Step + 1), callers, s.Status, strconv.FormatInt(s.Turns, 10), failed,
			ms(s.FirstTokenMs), ms(s.TurnMs), over, budget})
	}
	fmt.Fprintf(a.stdout, "Load test %s (%s): %s\n", lt.ID, oneLine(lt.TestName), lt.Status)
	table(a.stdout, []string{"STEP", "CALLERS", "STATUS", "TURNS", "FAILED", "FIRST TOKEN P50/P95 MS", "TURN P50/P95 MS", "OVERHEAD P95 µS", "BUDGET"}, rows)
	for _, s := range lt.Steps {
		for _, f := range s.Failures {
			fmt.Fprintf(a.stdout, "step %d: %d turn(s) failed: %s\n", s.Step+1, f.Count, oneLine(f.Reason))
		}
	}
	if lt.BrokeBudgetAtStep == nil {
		if lt.Status == "completed" {
			fmt.Fprintln(a.stdout, "Every step met the budget.")
		}
		return
	}
	s := lt.Steps[*lt.BrokeBudgetAtStep]
	var why []string
	for _, b := range s.BudgetBreaches {
		why = append(why, fmt.Sprintf("%s %d ms over %d ms", strings.ReplaceAll(b.Metric, "_", " "), b.MeasuredMs, b.BudgetMs))
	}
	if s.FailedTurns > 0 {
		why = append(why, fmt.Sprintf("%d turn(s) failed", s.FailedTurns))
	}
	fmt.Fprintf(a.stdout, "The budget broke at step %d (%d callers): %s.\n", s.Step+1, s.Callers, strings.Join(why, "; "))
}
