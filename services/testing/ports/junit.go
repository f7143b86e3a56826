package ports

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// JUnit outcomes of a test case.
const (
	JUnitPassed  = "passed"
	JUnitFailure = "failure"
	JUnitError   = "error"
	JUnitSkipped = "skipped"
)

// JUnitSuite is the head of an invocation's JUnit document: one suite.
type JUnitSuite struct {
	Name, ID                         string
	Tests, Failures, Errors, Skipped int
	TimeMs                           int64 // the cases' times added up
	Timestamp                        time.Time
	Properties                       [][2]string // name, value
}

// JUnitCase is one test case (one run).
type JUnitCase struct {
	Name, Classname string
	TimeMs          int64
	Outcome         string // JUnitPassed, JUnitFailure, JUnitError or JUnitSkipped
	Message         string // the outcome element's message attribute (its first line is used)
	Text            string // the outcome element's text
}

// JUnitWriter writes a JUnit XML document (the Jenkins xUnit junit-10.xsd
// shape, which Surefire, Jenkins, GitLab and GitHub reporters read) one
// element at a time: Begin, Case for each run, End. Every attribute and
// text is escaped by encoding/xml, which also replaces the characters XML
// 1.0 forbids (most control characters, invalid UTF-8) with U+FFFD.
type JUnitWriter struct {
	w *bufio.Writer
}

// NewJUnitWriter writes to w.
func NewJUnitWriter(w io.Writer) *JUnitWriter { return &JUnitWriter{w: bufio.NewWriterSize(w, 64<<10)} }

func (j *JUnitWriter) attr(name, value string) {
	j.w.WriteByte(' ')
	j.w.WriteString(name)
	j.w.WriteString(`="`)
	_ = xml.EscapeText(j.w, []byte(value))
	j.w.WriteByte('"')
}

// text writes element text escaped, its line feeds as they are (an
// attribute's are escaped, or a parser would turn them into spaces).
func (j *JUnitWriter) text(s string) {
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			j.w.WriteByte('\n')
		}
		_ = xml.EscapeText(j.w, []byte(line))
	}
}

func (j *JUnitWriter) intAttr(name string, n int) { j.attr(name, strconv.Itoa(n)) }

// Seconds formats milliseconds as decimal seconds with 3 decimals.
func Seconds(ms int64) string {
	ms = max(ms, 0)
	return strconv.FormatInt(ms/1000, 10) + "." + strconv.FormatInt(1000+ms%1000, 10)[1:]
}

// Begin writes the declaration, <testsuites>, <testsuite> and its
// properties. junit-10.xsd allows no skipped attribute on <testsuites>:
// skipped is on <testsuite> only.
func (j *JUnitWriter) Begin(s JUnitSuite) {
	j.w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<testsuites")
	j.attr("name", s.Name)
	j.intAttr("tests", s.Tests)
	j.intAttr("failures", s.Failures)
	j.intAttr("errors", s.Errors)
	j.attr("time", Seconds(s.TimeMs))
	j.w.WriteString(">\n  <testsuite")
	j.attr("name", s.Name)
	j.attr("id", s.ID)
	j.intAttr("tests", s.Tests)
	j.intAttr("failures", s.Failures)
	j.intAttr("errors", s.Errors)
	j.intAttr("skipped", s.Skipped)
	j.attr("time", Seconds(s.TimeMs))
	j.attr("timestamp", s.Timestamp.UTC().Format(time.RFC3339))
	j.attr("hostname", "voiceai")
	j.w.WriteString(">\n    <properties>\n")
	for _, p := range s.Properties {
		j.w.WriteString("      <property")
		j.attr("name", p[0])
		j.attr("value", p[1])
		j.w.WriteString("/>\n")
	}
	j.w.WriteString("    </properties>\n")
}

// Case writes one <testcase>; its error is the writer's, once it has one.
func (j *JUnitWriter) Case(c JUnitCase) error {
	j.w.WriteString("    <testcase")
	j.attr("name", c.Name)
	j.attr("classname", c.Classname)
	j.attr("time", Seconds(c.TimeMs))
	switch c.Outcome {
	case JUnitFailure, JUnitError, JUnitSkipped:
		j.w.WriteString(">\n      <")
		j.w.WriteString(c.Outcome)
		j.attr("message", firstLine(c.Message))
		if c.Outcome != JUnitSkipped {
			j.attr("type", c.Outcome)
		}
		j.w.WriteByte('>')
		j.text(c.Text)
		j.w.WriteString("</")
		j.w.WriteString(c.Outcome)
		_, err := j.w.WriteString(">\n    </testcase>\n")
		return err
	}
	_, err := j.w.WriteString("/>\n")
	return err
}

// End closes the document and flushes it.
func (j *JUnitWriter) End() error {
	j.w.WriteString("  </testsuite>\n</testsuites>\n")
	return j.w.Flush()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// JUnitNames are the names of inv's test cases, by planned test: each
// test's name, and where two planned tests share one (a test listed twice,
// two tests of one name) the test's id after it, then its place among the
// planned tests of that id: CI report tools merge cases of one classname
// and name, and would count fewer than ran.
func JUnitNames(inv *testingv1.Invocation) []string {
	tests := inv.GetTests()
	names := make([]string, len(tests))
	byName, byID := map[string]int{}, map[string]int{}
	for i, pt := range tests {
		names[i] = orDefault(pt.GetTestName(), "Unknown Test")
		byName[pt.GetTestType()+"\x00"+names[i]]++
		byID[pt.GetTestId()]++
	}
	seen := map[string]int{}
	for i, pt := range tests {
		if byName[pt.GetTestType()+"\x00"+names[i]] < 2 {
			continue
		}
		names[i] += " (" + pt.GetTestId() + ")"
		if byID[pt.GetTestId()] > 1 {
			seen[pt.GetTestId()]++
			names[i] += " #" + strconv.Itoa(seen[pt.GetTestId()])
		}
	}
	return names
}

// JUnitCaseOf is run idx of inv as a test case, named by names (its
// JUnitNames): res is its result, nil for a run without one, whose status
// is then unrun.
func JUnitCaseOf(inv *testingv1.Invocation, names []string, idx int, res *testingv1.RunResult, unrun string) JUnitCase {
	repeat := int(max(inv.GetRepeatCount(), 1))
	pt := inv.GetTests()[idx/repeat]
	c := JUnitCase{Name: names[idx/repeat], Classname: inv.GetAgentId() + "." + orDefault(pt.GetTestType(), "llm")}
	if repeat > 1 {
		c.Name += " (repeat " + strconv.Itoa(idx%repeat+1) + "/" + strconv.Itoa(repeat) + ")"
	}
	if res == nil {
		c.Outcome = JUnitSkipped
		c.Message = "The run is pending."
		if unrun == domain.RunCancelled {
			c.Message = "The run was cancelled before it had a result." // not started, or its result dropped by a resubmission
		}
		return c
	}
	c.TimeMs = res.GetFinishedAtUnixMs() - res.GetStartedAtUnixMs()
	switch {
	case res.GetStatus() == domain.RunPassed:
		c.Outcome = JUnitPassed
	case res.GetStatus() == domain.RunCancelled:
		c.Outcome, c.Message = JUnitSkipped, "The run was cancelled."
	case res.GetError() != "":
		c.Outcome, c.Message, c.Text = JUnitError, res.GetError(), rationaleText(res)
	default:
		c.Outcome, c.Message, c.Text = JUnitFailure, orDefault(res.GetRationaleSummary(), "The judge found the condition not met."), rationaleText(res)
	}
	return c
}

// rationaleText is a result's condition result and whole rationale.
func rationaleText(res *testingv1.RunResult) string {
	var b strings.Builder
	if e := res.GetError(); e != "" {
		b.WriteString("error: " + e + "\n")
	}
	b.WriteString("condition_result: " + res.GetConditionResult() + "\n")
	if s := res.GetRationaleSummary(); s != "" && s != res.GetError() {
		b.WriteString("summary: " + s + "\n")
	}
	for _, m := range res.GetRationaleMessages() {
		b.WriteString("- " + m + "\n")
	}
	return b.String()
}

// writeInvocationJUnit streams a stored invocation as a JUnit XML
// document, one test case per run, with a baseline comparison's counts
// among its properties when baseline is not nil. The suite's counts come
// first in the document, so the runs are read twice: once to count, once
// to write; a run that had no result on the first read is written without
// one, so the counts always match the cases. Memory holds two bits per run
// and one entry per distinct test.
func writeInvocationJUnit(ctx context.Context, a *app.App, w io.Writer, inv, baseline *testingv1.Invocation) error {
	if inv.GetLoad() != nil {
		return writeLoadJUnit(w, inv)
	}
	s := JUnitSuite{Name: orDefault(inv.GetTitle(), inv.GetInvocationId()), ID: inv.GetInvocationId(),
		Timestamp: time.Unix(inv.GetCreatedAtUnix(), 0)}
	now := app.NewTestStatuses(inv)
	names := JUnitNames(inv)
	var turns, firstTokens latencyTally
	had, err := a.EachRun(ctx, inv, false, nil, func(idx int, _ string, res *testingv1.RunResult, unrun string) error {
		now.Add(idx, app.RunStatus(res, unrun))
		turns.add(res.GetAgentTurnMs()...)
		firstTokens.add(res.GetAgentFirstTokenMs()...)
		c := JUnitCaseOf(inv, names, idx, res, unrun)
		s.Tests++
		s.TimeMs += max(c.TimeMs, 0)
		switch c.Outcome {
		case JUnitFailure:
			s.Failures++
		case JUnitError:
			s.Errors++
		case JUnitSkipped:
			s.Skipped++
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.Properties = [][2]string{{"agent_id", inv.GetAgentId()}, {"branch_id", inv.GetBranchId()},
		{"invocation_id", inv.GetInvocationId()}, {"status", inv.GetStatus()},
		{"repeat_count", strconv.Itoa(int(max(inv.GetRepeatCount(), 1)))}}
	s.Properties = append(s.Properties, latencyProperties(&turns, &firstTokens)...)
	if baseline != nil {
		c, err := a.CompareWith(ctx, inv, now, baseline)
		if err != nil {
			return err
		}
		s.Properties = append(s.Properties, [2]string{"baseline_invocation_id", baseline.GetInvocationId()},
			[2]string{"regressions", strconv.Itoa(len(c.Regressions))}, [2]string{"fixes", strconv.Itoa(len(c.Fixes))},
			[2]string{"new_failures", strconv.Itoa(len(c.NewFailures))}, [2]string{"still_failing", strconv.Itoa(len(c.StillFailing))})
	}
	j := NewJUnitWriter(w)
	j.Begin(s)
	_, err = a.EachRun(ctx, inv, false, had, func(idx int, _ string, res *testingv1.RunResult, unrun string) error {
		return j.Case(JUnitCaseOf(inv, names, idx, res, unrun))
	})
	if err != nil {
		return err
	}
	return j.End()
}

// latencyProperties are the agent's latency over an invocation's turns as
// suite properties: agent_turns, then agent_turn_{p50,p95,max}_ms and
// agent_first_token_{p50,p95,max}_ms, each only when there are such
// times. junit-10.xsd has no properties on a testcase, so they are the
// suite's; a run's own times are in its JSON (agent_latency).
func latencyProperties(turns, firstTokens *latencyTally) [][2]string {
	out := [][2]string{{"agent_turns", strconv.Itoa(turns.n)}}
	for _, m := range []struct {
		name  string
		tally *latencyTally
	}{{"agent_turn", turns}, {"agent_first_token", firstTokens}} {
		p50, p95, top := m.tally.percentiles()
		if p50 == nil {
			continue
		}
		out = append(out, [2]string{m.name + "_p50_ms", strconv.FormatInt(*p50, 10)},
			[2]string{m.name + "_p95_ms", strconv.FormatInt(*p95, 10)}, [2]string{m.name + "_max_ms", strconv.FormatInt(*top, 10)})
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// writeLoadJUnit writes a load test as a JUnit document: it has no runs,
// and each step is a test case, failed where it broke the budget, so that
// a CI job reading it sees the load test's outcome.
func writeLoadJUnit(w io.Writer, inv *testingv1.Invocation) error {
	v := LoadTestView(inv)
	s := JUnitSuite{Name: orDefault(inv.GetTitle(), inv.GetInvocationId()), ID: inv.GetInvocationId(), Timestamp: time.Unix(inv.GetCreatedAtUnix(), 0),
		Properties: [][2]string{{"agent_id", inv.GetAgentId()}, {"branch_id", inv.GetBranchId()}, {"invocation_id", inv.GetInvocationId()},
			{"status", inv.GetStatus()}, {"repeat_count", "1"},
			{"load_test", "true"}, {"test_id", v.TestID}, {"turns_per_caller", strconv.Itoa(v.TurnsPerCaller)}}}
	if v.BrokeBudgetAtStep != nil {
		s.Properties = append(s.Properties, [2]string{"broke_budget_at_callers", strconv.Itoa(*v.BrokeBudgetAtCallers)})
	}
	cases := make([]JUnitCase, len(v.Steps))
	for i, st := range v.Steps {
		c := JUnitCase{Name: fmt.Sprintf("step %d: %d callers", st.Step+1, st.Callers), Classname: inv.GetAgentId() + ".load"}
		if st.StartedAtUnixMs != nil && st.FinishedAtUnixMs != nil {
			c.TimeMs = *st.FinishedAtUnixMs - *st.StartedAtUnixMs
		}
		switch {
		case st.Status == "cancelled":
			c.Outcome, c.Message = JUnitSkipped, "The step was cancelled."
		case st.Status != "completed":
			c.Outcome, c.Message = JUnitSkipped, "The step has not finished."
		case st.MetBudget != nil && *st.MetBudget:
			c.Outcome = JUnitPassed
		default:
			c.Outcome, c.Message, c.Text = JUnitFailure, "The step broke the test's latency budget.", loadStepText(st)
		}
		s.Tests++
		s.TimeMs += max(c.TimeMs, 0)
		switch c.Outcome {
		case JUnitFailure:
			s.Failures++
		case JUnitSkipped:
			s.Skipped++
		}
		cases[i] = c
	}
	j := NewJUnitWriter(w)
	j.Begin(s)
	for _, c := range cases {
		if err := j.Case(c); err != nil {
			return err
		}
	}
	return j.End()
}

// loadStepText is what broke in a step: its budget breaches and its
// failed turns by reason.
func loadStepText(st wire.LoadStep) string {
	var b strings.Builder
	for _, br := range st.BudgetBreaches {
		fmt.Fprintf(&b, "%s: measured %d ms, budget %d ms\n", br.Metric, br.MeasuredMs, br.BudgetMs)
	}
	fmt.Fprintf(&b, "failed turns: %d of %d\n", st.FailedTurns, st.Turns)
	for _, f := range st.Failures {
		fmt.Fprintf(&b, "- %d: %s\n", f.Count, f.Reason)
	}
	return b.String()
}
