package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

func (a *app) testsListCommand() *cobra.Command {
	return listCommand(a, listing[wire.TestEntry]{
		short: "List the workspace's tests, newest first", route: listTests, items: "tests", noun: "tests", pageSize: 30,
		filters: []filter{
			text("search", "search", "only tests whose name contains this"),
			text("folder", "parent_folder_id", "only tests directly in this folder id (root: the root)"),
			anyOf("type", "types", "only these types: llm, tool, simulation (repeatable)"),
		},
		header: []string{"ID", "TYPE", "NAME", "FOLDER", "CREATED"},
		row: func(t wire.TestEntry) []string {
			return []string{t.ID, t.Type, clip(t.Name, 50), folderPath(t), unixTime(t.CreatedAtUnix)}
		},
	})
}

func folderPath(t wire.TestEntry) string {
	names := make([]string, len(t.FolderPath))
	for i, f := range t.FolderPath {
		names[i] = f.Name
	}
	if len(names) == 0 {
		return "/"
	}
	return "/" + strings.Join(names, "/")
}

type testDetail struct {
	ID               string                `json:"id"`
	Name             string                `json:"name"`
	Type             string                `json:"type"`
	Parent           *string               `json:"parent_folder_id"`
	SuccessCondition string                `json:"success_condition"`
	Conditions       []string              `json:"success_conditions"`
	Scenario         string                `json:"simulation_scenario"`
	Created          int64                 `json:"created_at_unix_secs"`
	Updated          int64                 `json:"last_updated_at_unix_secs"`
	Reliability      *wire.TestReliability `json:"reliability"`
}

func (a *app) testsShowCommand() *cobra.Command {
	return callCommand(a, "show <test_id>", "Show a test and how reliably it passes", getTest, func(t testDetail) {
		conds := t.Conditions
		if t.SuccessCondition != "" && !slices.Contains(conds, t.SuccessCondition) {
			conds = append([]string{t.SuccessCondition}, conds...)
		}
		kv := []string{"ID", t.ID, "Name", t.Name, "Type", t.Type, "Folder", orDash(t.Parent),
			"Success conditions", dash(strings.Join(conds, " | ")), "Created", unixTime(t.Created), "Updated", unixTime(t.Updated)}
		if t.Scenario != "" {
			kv = append(kv, "Scenario", clip(t.Scenario, 200))
		}
		r := t.Reliability
		if r != nil && r.Runs > 0 {
			kv = append(kv, "Reliability", fmt.Sprintf("%d of %d recent runs passed (%.0f%%)", r.Passed, r.Runs, r.PassRate*100))
			if l := agentLatency(r.AgentLatency); l.Turns > 0 {
				kv = append(kv, "First token", l.firstToken(), "Whole turn", l.turn()+fmt.Sprintf(" (%d agent turns)", l.Turns))
			}
		}
		fields(a.stdout, kv...)
		if r == nil || len(r.Invocations) == 0 {
			return
		}
		// Its history: each recent invocation's pass count and p95s.
		rows := make([][]string, len(r.Invocations))
		for i, inv := range r.Invocations {
			l := inv.AgentLatency
			rows[i] = []string{inv.InvocationID, unixTime(inv.CreatedAtUnix), fmt.Sprintf("%d/%d", inv.Passed, inv.Runs), millis(l.FirstTokenP95Ms), millis(l.P95Ms)}
		}
		fmt.Fprintln(a.stdout)
		table(a.stdout, []string{"INVOCATION", "CREATED", "PASSED", "FIRST TOKEN P95", "TURN P95"}, rows)
	})
}

// testsInvocationCommand shows a past invocation as tests run --wait
// summarises one: its failures grouped, and the totals.
func (a *app) testsInvocationCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "invocation <invocation_id>",
		Short: "Show a test invocation: its failures, grouped, and its totals (a load test: its steps)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var inv invocation
			if show, err := a.fetch(cmd.Context(), getInvocation, args, nil, nil, &inv); !show {
				return err
			}
			if len(inv.TestRuns) == 0 && inv.Status != "running" {
				// A load test has no runs: its steps are what it did.
				var lt wire.LoadTest
				if c, err := a.client(); err == nil {
					if _, err := c.call(cmd.Context(), getLoadTest, args, nil, nil, &lt); err == nil {
						a.loadSummary(lt)
						return nil
					}
				}
			}
			a.summary(inv, 0, "")
			return nil
		},
	}
}

// invocation is what the CLI reads of a test invocation.
type invocation struct {
	ID       string    `json:"id"`
	AgentID  string    `json:"agent_id"`
	Status   string    `json:"status"` // running, completed, cancelled
	Title    string    `json:"title"`
	TestRuns []testRun `json:"test_runs"`
	// AgentLatency is over every agent turn of its runs (nil from a
	// server that does not report it).
	AgentLatency *agentLatency `json:"agent_latency"`
}

// agentLatency is how long the agent took to begin its turns (time to
// first token: what a caller waits before it speaks) and to finish them;
// its figures are nil where nothing was recorded.
type agentLatency wire.AgentLatency

// String is the latency as the summary's totals print it, or "" when no
// turn was recorded.
func (l *agentLatency) String() string {
	if l == nil || l.Turns == 0 {
		return ""
	}
	return fmt.Sprintf("Agent latency over %d turn(s): first token %s; whole turn %s", l.Turns, l.firstToken(), l.turn())
}

func (l *agentLatency) firstToken() string {
	return latencyFigures(l.FirstTokenP50Ms, l.FirstTokenP95Ms, l.FirstTokenMaxMs)
}

func (l *agentLatency) turn() string { return latencyFigures(l.P50Ms, l.P95Ms, l.MaxMs) }

func latencyFigures(p50, p95, top *int64) string {
	if p50 == nil || p95 == nil || top == nil {
		return "not recorded"
	}
	return fmt.Sprintf("p50 %d ms, p95 %d ms, max %d ms", *p50, *p95, *top)
}

// millis is a time in milliseconds, or "-" when there is none.
func millis(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10) + " ms"
}

type testRun struct {
	TestRunID       string               `json:"test_run_id"`
	TestID          string               `json:"test_id"`
	TestName        string               `json:"test_name"`
	Status          string               `json:"status"` // pending, passed, failed, cancelled
	Error           string               `json:"error"`
	ConditionResult wire.ConditionResult `json:"condition_result"`
	ModelUsage      struct {
		Model string `json:"model"`
	} `json:"model_usage"`
	TestInfo struct {
		Type string `json:"type"` // llm, tool or simulation
	} `json:"test_info"`
}

// counts of an invocation's runs by status.
func (inv invocation) counts() (passed, failed, finished int) {
	for _, r := range inv.TestRuns {
		switch r.Status {
		case "passed":
			passed++
		case "failed":
			failed++
		}
	}
	return passed, failed, passed + failed
}

// maxTestsPerRun is the spec's bound on one run-tests request.
const maxTestsPerRun = 5000

func (a *app) testsRunCommand() *cobra.Command {
	var agent, junit string
	var tests []string
	var wait bool
	var timeout, poll time.Duration
	var repeat int
	var gate judgeGate
	cmd := &cobra.Command{
		Use:   "run --agent <agent_id> [--test <test_id> ...] [--wait] [--junit <file>]",
		Short: "Run tests on an agent, optionally waiting for the results",
		Long: `Runs tests on an agent: the --test ids given, or else every test of the workspace.

With --wait it follows the invocation until every run has finished (a progress
bar on a terminal, progress lines otherwise, on stderr), prints a summary and,
with --junit, writes the invocation as JUnit XML for a CI test report.

With --min-judge-agreement it also reads the judge report: when the judge of
a test that ran agrees with people's labels less than that (or has fewer than
--min-judge-labels labels), the verdicts are not used to gate: it says which
tests and why, on stderr, and exits 3 whatever the runs gave.

Exit codes: 0 every run passed (or, without --wait, the runs were started),
1 some run failed, 2 an error (bad key, unknown agent or test, network, time-out),
3 a test's judge is below --min-judge-agreement.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if junit != "" && !wait {
				return errors.New("--junit needs --wait: the report is written once the runs have finished")
			}
			if gate.minAgreement != 0 && !wait {
				return errors.New("--min-judge-agreement needs --wait: the judges are checked once the runs have finished")
			}
			if gate.minAgreement < 0 || gate.minAgreement > 1 || gate.minLabels < 1 {
				return errors.New("--min-judge-agreement is a share from 0 to 1, --min-judge-labels at least 1")
			}
			if junit != "" {
				if err := writable(junit); err != nil {
					return fmt.Errorf("--junit %s: %w", junit, err)
				}
			}
			c, ctx, cancel, err := a.waitingClient(cmd.Context(), wait, timeout)
			if err != nil {
				return err
			}
			defer cancel()
			if len(tests) == 0 {
				if tests, err = allTests(ctx, c); err != nil {
					return err
				}
			}
			refs := make([]map[string]string, len(tests))
			for i, id := range tests {
				refs[i] = map[string]string{"test_id": id}
			}
			var inv invocation
			raw, err := c.call(ctx, runTests, []string{agent}, nil, map[string]any{"tests": refs, "repeat_count": repeat}, &inv)
			if err != nil {
				return err
			}
			if !wait {
				a.started(raw, "Started invocation %s: %d run(s) of %d test(s) on agent %s.\n", inv.ID, len(inv.TestRuns), len(tests), agent)
				return nil
			}
			start := time.Now()
			raw, inv, err = a.follow(ctx, c, inv, poll)
			if err != nil {
				return stoppedWaiting(err, timeout, "invocation "+inv.ID)
			}
			// The summary is printed even when the report could not be
			// written, then the error: the runs' results are not lost.
			var junitErr error
			if junit != "" {
				xml, err := c.call(ctx, getInvocation, []string{inv.ID}, url.Values{"format": {"junit"}}, nil, nil)
				if err != nil {
					junitErr = fmt.Errorf("fetching the JUnit report: %w", err)
				} else if err := os.WriteFile(junit, xml, 0o644); err != nil {
					junitErr = fmt.Errorf("writing the JUnit report: %w", err)
				}
			}
			shownJunit := junit
			if junitErr != nil {
				shownJunit = ""
			}
			if a.json {
				a.printJSON(raw)
			} else {
				a.summary(inv, time.Since(start), shownJunit)
			}
			if junitErr != nil {
				return junitErr
			}
			if inv.Status == "cancelled" {
				return fmt.Errorf("invocation %s was cancelled", inv.ID)
			}
			if gate.minAgreement > 0 {
				below, err := gate.check(ctx, c, inv)
				if err != nil {
					return err
				}
				if len(below) > 0 {
					fmt.Fprintf(a.stderr, "Not gating on these results: the judge of %d test(s) is below --min-judge-agreement %.2f (at least %d labels):\n",
						len(below), gate.minAgreement, gate.minLabels)
					for _, b := range below {
						fmt.Fprintln(a.stderr, "  "+b)
					}
					fmt.Fprintln(a.stderr, "Label more runs (voiceai judge queue, voiceai judge label, or the console's review page) or lower the bar.")
					return errJudgeUncalibrated
				}
			}
			if _, failed, _ := inv.counts(); failed > 0 {
				return errTestsFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "agent id (required)")
	f.StringArrayVar(&tests, "test", nil, "test id to run (repeatable; default: every test of the workspace)")
	f.IntVar(&repeat, "repeat", 1, "runs of each test (1-50)")
	f.BoolVar(&wait, "wait", false, "wait for the results; the exit code tells whether every run passed")
	f.StringVar(&junit, "junit", "", "with --wait, write the results as JUnit XML to this file")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait, give up after this long (exit 2)")
	f.DurationVar(&poll, "poll", 2*time.Second, "with --wait, how often to ask for progress")
	f.Float64Var(&gate.minAgreement, "min-judge-agreement", 0, "with --wait, exit 3 (not gating) when a test's judge agrees with people's labels less than this (0-1; 0 = off)")
	f.IntVar(&gate.minLabels, "min-judge-labels", 10, "with --min-judge-agreement, the labels a test's judge needs before its agreement counts")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

// writable checks a file can be written at path, before a run starts that
// would only then write it: its folder exists and takes a new file, and
// path is not a folder. Nothing is left behind.
func writable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a folder")
	}
	probe, err := os.CreateTemp(filepath.Dir(path), ".voiceai-junit-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write a file in %s: %w", filepath.Dir(path), err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// allTests lists every test of the workspace (every folder), oldest first
// so runs come in the order the tests were written.
func allTests(ctx context.Context, c *client) ([]string, error) {
	var ids []string
	q := url.Values{"page_size": {"100"}}
	for {
		var page map[string]json.RawMessage
		if _, err := c.call(ctx, listTests, nil, q, nil, &page); err != nil {
			return nil, err
		}
		tests, hasMore, next, err := decodePage[wire.TestEntry](page, "tests")
		if err != nil {
			return nil, err
		}
		for _, t := range tests {
			if t.EntityType != "folder" {
				ids = append(ids, t.ID)
			}
		}
		if len(ids) > maxTestsPerRun {
			return nil, fmt.Errorf("the workspace has more than %d tests, more than one run may hold: name them with --test", maxTestsPerRun)
		}
		if !hasMore || next == nil {
			break
		}
		q.Set("cursor", *next)
	}
	if len(ids) == 0 {
		return nil, errors.New("the workspace has no tests: create one, or name them with --test")
	}
	slices.Reverse(ids)
	return ids, nil
}

// follow polls the invocation until it is no longer running, reporting
// finished runs, and returns its last answer. The rate limit and outages
// only slow it down (app.persist) until ctx's --timeout.
func (a *app) follow(ctx context.Context, c *client, inv invocation, every time.Duration) ([]byte, invocation, error) {
	prog := newProgress(a.stderr, inv.ID, len(inv.TestRuns))
	defer prog.done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		var cur invocation
		var raw []byte
		err := a.persist(ctx, "waiting for invocation "+inv.ID, false, func() (err error) {
			cur = invocation{}
			raw, err = c.call(ctx, getInvocation, []string{inv.ID}, nil, nil, &cur)
			return err
		})
		if err != nil {
			return nil, inv, err
		}
		inv = cur
		passed, failed, _ := inv.counts()
		prog.update(passed, failed)
		if inv.Status != "running" {
			return raw, inv, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, inv, ctx.Err()
		}
	}
}

// summary prints the runs that did not pass, those of one test with the
// same outcome and reason as one line with their count (a test repeated 20
// times that fails alike is one line), then each reason the table had to
// cut, in full, then the totals and the agent's latency (first token and
// whole turn, p50/p95/max).
func (a *app) summary(inv invocation, took time.Duration, junit string) {
	passed, failed, _ := inv.counts()
	type group struct {
		status, testID, name, reason string
		runs                         int
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, r := range inv.TestRuns {
		if r.Status == "passed" {
			continue
		}
		reason := r.Error
		if reason == "" {
			reason = r.ConditionResult.Rationale.Summary
		}
		if reason == "" && len(r.ConditionResult.Rationale.Messages) > 0 {
			reason = r.ConditionResult.Rationale.Messages[0]
		}
		key := r.Status + "\x00" + r.TestID + "\x00" + reason
		if g, ok := byKey[key]; ok {
			g.runs++
			continue
		}
		g := &group{status: r.Status, testID: r.TestID, name: r.TestName, reason: reason, runs: 1}
		byKey[key] = g
		groups = append(groups, g)
	}
	var rows [][]string
	var full []string
	for _, g := range groups {
		shown := clip(g.reason, 100)
		if shown != oneLine(g.reason) {
			full = append(full, fmt.Sprintf("[%d] %s", len(full)+1, indented(printable(g.reason))))
			shown = clip(g.reason, 96) + fmt.Sprintf(" [%d]", len(full))
		}
		rows = append(rows, []string{strings.ToUpper(g.status), strconv.Itoa(g.runs), g.testID, clip(g.name, 40), shown})
	}
	if len(rows) > 0 {
		table(a.stdout, []string{"STATUS", "RUNS", "TEST", "NAME", "REASON"}, rows)
		for _, f := range full {
			fmt.Fprintln(a.stdout, f)
		}
	}
	fmt.Fprintf(a.stdout, "%d passed, %d failed", passed, failed)
	if other := len(inv.TestRuns) - passed - failed; other > 0 {
		fmt.Fprintf(a.stdout, ", %d not run", other)
	}
	in := ""
	if took > 0 {
		in = " in " + took.Round(100*time.Millisecond).String()
	}
	fmt.Fprintf(a.stdout, " of %d run(s)%s; invocation %s (%s)\n", len(inv.TestRuns), in, inv.ID, inv.Status)
	if l := inv.AgentLatency.String(); l != "" {
		fmt.Fprintln(a.stdout, l)
	}
	if junit != "" {
		fmt.Fprintf(a.stdout, "JUnit report: %s\n", junit)
	}
}
