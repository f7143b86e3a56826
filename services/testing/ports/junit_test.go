package ports

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/ports/junitxsd"
)

func schema(t *testing.T) *junitxsd.Schema {
	t.Helper()
	s, err := junitxsd.JUnit10()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validJUnit writes a document of one suite and its cases, fails unless it
// is valid against junit-10.xsd, and returns it parsed.
func validJUnit(t *testing.T, suite JUnitSuite, cases ...JUnitCase) *junitxsd.Document {
	t.Helper()
	var b bytes.Buffer
	j := NewJUnitWriter(&b)
	j.Begin(suite)
	for _, c := range cases {
		if err := j.Case(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.End(); err != nil {
		t.Fatal(err)
	}
	if err := schema(t).Validate(bytes.NewReader(b.Bytes())); err != nil {
		t.Fatalf("not valid against junit-10.xsd: %v\n%s", err, b.Bytes())
	}
	d, err := junitxsd.Parse(b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Bytes())
	}
	return d
}

// A document with every outcome and hostile names, rationales and
// properties is valid against junit-10.xsd and its counts add up.
func TestJUnitDocumentValidatesAgainstTheXSD(t *testing.T) {
	hostile := "Ｔest \"<&'> ]]> \x00\x07\x1b\ufffe\xfe\r\nsecond line"
	inv := &testingv1.Invocation{InvocationId: "tinv_1", AgentId: "agent_1", RepeatCount: 2, Status: domain.InvocationCompleted,
		Title: hostile, CreatedAtUnix: 1_700_000_000,
		Tests: []*testingv1.PlannedTest{{TestId: "test_a", TestName: hostile, TestType: "llm"}, {TestId: "test_b", TestName: "Book", TestType: "tool"}}}
	runs := []struct {
		res   *testingv1.RunResult
		unrun string
	}{
		{&testingv1.RunResult{Status: domain.RunPassed, StartedAtUnixMs: 10, FinishedAtUnixMs: 1_510}, ""},
		{&testingv1.RunResult{Status: domain.RunFailed, ConditionResult: domain.ConditionFailure, StartedAtUnixMs: 0, FinishedAtUnixMs: 250,
			RationaleSummary: hostile, RationaleMessages: []string{hostile, "]]>"}}, ""},
		{&testingv1.RunResult{Status: domain.RunFailed, Error: "The run exceeded its time limit of 2m0s.\n" + hostile, StartedAtUnixMs: 5, FinishedAtUnixMs: 7}, ""},
		{nil, domain.RunCancelled},
	}
	var cases []JUnitCase
	for i, r := range runs {
		cases = append(cases, JUnitCaseOf(inv, JUnitNames(inv), i, r.res, r.unrun))
	}
	d := validJUnit(t, JUnitSuite{Name: inv.GetTitle(), ID: inv.GetInvocationId(), Tests: 4, Failures: 1, Errors: 1, Skipped: 1, TimeMs: 1_752,
		Timestamp: time.Unix(inv.GetCreatedAtUnix(), 0), Properties: [][2]string{{"agent_id", "agent_1"}, {"branch_id", ""},
			{"invocation_id", "tinv_1"}, {"status", "completed"}, {"repeat_count", "2"}, {"regressions", "1"}}}, cases...)
	s := d.Suites[0]
	if s.Tests != "4" || s.Failures != "1" || s.Errors != "1" || s.Skipped != "1" || s.Time != "1.752" || s.Timestamp != "2023-11-14T22:13:20Z" {
		t.Fatalf("suite: %+v", s)
	}
	c := s.Cases
	if !strings.HasSuffix(c[0].Name, " (repeat 1/2)") || c[0].Classname != "agent_1.llm" || c[0].Time != "1.500" ||
		c[1].Failure == nil || !strings.Contains(c[1].Failure.Text, "- ]]>") || strings.ContainsAny(c[1].Failure.Message, "\r\n") ||
		c[2].Error == nil || c[2].Error.Message != "The run exceeded its time limit of 2m0s." ||
		c[3].Skipped == nil || c[3].Classname != "agent_1.tool" {
		t.Fatalf("cases: %+v", c)
	}
}

// The validator is not a formality: each departure from the schema is
// refused.
func TestXSDValidatorRefusesWhatTheSchemaForbids(t *testing.T) {
	s := schema(t)
	ok := `<testsuites name="n" tests="1" failures="0" errors="0" time="1.000">` +
		`<testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="1.000"><properties><property name="a" value="b"/></properties>` +
		`<testcase name="c" classname="k" time="1.000"><failure message="m" type="failure">text</failure></testcase></testsuite></testsuites>`
	inOrder := strings.Replace(ok, "</testcase>",
		`<rerunFailure type="x"><system-out>o</system-out><system-err>e</system-err></rerunFailure><system-out/></testcase>`, 1)
	for _, doc := range []string{ok, inOrder} {
		if err := s.Validate(strings.NewReader(doc)); err != nil {
			t.Fatalf("a valid document refused: %v\n%s", err, doc)
		}
	}
	bad := map[string]string{
		"unknown element":         strings.Replace(ok, "<properties>", "<properties><bogus/>", 1),
		"unknown attribute":       strings.Replace(ok, `<testcase name="c"`, `<testcase name="c" flavour="x"`, 1),
		"skipped on testsuites":   strings.Replace(ok, `<testsuites name="n"`, `<testsuites name="n" skipped="0"`, 1),
		"missing required":        strings.Replace(ok, ` failures="0" errors="0" skipped="0"`, ` errors="0" skipped="0"`, 1),
		"missing property value":  strings.Replace(ok, ` value="b"`, ``, 1),
		"time not SUREFIRE_TIME":  strings.Replace(ok, `time="1.000">`, `time="1.5s">`, 1),
		"text in element content": strings.Replace(ok, "<properties>", "stray<properties>", 1),
		"testcase at the top":     strings.Replace(ok, `<testsuite name="s"`, `<testcase name="x"/><testsuite name="s"`, 1),
		"undeclared root":         `<bogus/>`,
		"text outside the root":   ok + "x",
		"two roots":               ok + ok,
		"namespace":               strings.Replace(ok, `<testsuites `, `<testsuites xmlns="urn:x" `, 1),
		"control character":       strings.Replace(ok, ">text<", ">te\x01xt<", 1),
		"testcase in properties":  strings.Replace(ok, "<property ", "<testcase name=\"x\"/><property ", 1),
		"sequence out of order": strings.Replace(ok, "</testcase>",
			`<rerunFailure type="x"><system-err>e</system-err><system-out>o</system-out></rerunFailure></testcase>`, 1),
	}
	for what, doc := range bad {
		err := s.Validate(strings.NewReader(doc))
		if err == nil {
			t.Errorf("%s: accepted", what)
			continue
		}
		t.Logf("%s: %v", what, err)
	}
}

func TestInvocationFormat(t *testing.T) {
	cases := []struct {
		query, accept, want string
		invalid             bool
	}{
		{"", "", formatJSON, false},
		{"", "application/json", formatJSON, false},
		{"", "application/xml", formatJUnit, false},
		{"", "text/xml; charset=utf-8", formatJUnit, false},
		{"", "*/*", formatJSON, false},
		{"", "application/json, application/xml", formatJSON, false},
		{"", "application/json;q=0.5, application/xml", formatJUnit, false},
		{"", "application/xml;q=0, */*", formatJSON, false},
		{"", "Application/XML", formatJUnit, false},
		// JSON takes the quality of the most specific range matching it.
		{"", "text/xml;q=0.1, */*", formatJSON, false},
		{"", "application/xml;q=0.5, application/*", formatJSON, false},
		{"", "application/json;q=0.5, */*", formatJSON, false},
		{"", "application/xml, */*;q=0.1", formatJUnit, false},
		{"", "application/json;q=0.2, application/*;q=0.9, text/xml;q=0.5", formatJUnit, false},
		{"format=junit", "", formatJUnit, false},
		{"format=json", "application/xml", formatJSON, false},
		{"format=junit", "application/json", formatJUnit, false},
		{"format=xml", "", "", true},
		{"format=", "", formatJSON, false}, // empty is absent
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/convai/test-invocations/tinv_1?"+c.query, nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		// The edge checks the parameter against the document first.
		err := api.CheckQuery(r, api.GetInvocation)
		got := ""
		if err == nil {
			got = invocationFormat(r.Header.Values("Accept"), r.URL.Query().Get("format"))
		}
		if (err != nil) != c.invalid || (!c.invalid && got != c.want) {
			t.Errorf("?%s Accept %q: %q %v, want %q (invalid %v)", c.query, c.accept, got, err, c.want, c.invalid)
		}
		if err != nil {
			rec := httptest.NewRecorder()
			httpx.WriteError(rec, r, err)
			if rec.Code != 422 || !strings.Contains(rec.Body.String(), `["query","format"]`) {
				t.Errorf("?%s: %d %s", c.query, rec.Code, rec.Body)
			}
		}
	}
}

// The tally's percentiles are those of the values themselves, whatever
// their order and repeats.
func TestLatencyTallyMatchesPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 60 {
		ms := make([]int64, n)
		for i := range ms {
			ms[i] = rng.Int64N(int64(1 + n*3)) // repeats, often
		}
		var tally latencyTally
		tally.add(ms[:n/2]...)
		tally.add(ms[n/2:]...)
		got50, got95, gotMax := tally.percentiles()
		want50, want95, wantMax := percentiles(ms)
		if fmt.Sprint(deref(got50), deref(got95), deref(gotMax)) != fmt.Sprint(deref(want50), deref(want95), deref(wantMax)) {
			t.Fatalf("%v: tally %v %v %v, want %v %v %v", ms, deref(got50), deref(got95), deref(gotMax), deref(want50), deref(want95), deref(wantMax))
		}
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// An invocation's latency goes into its suite's properties, which stay
// valid against junit-10.xsd; times not recorded give no property.
func TestJUnitLatencyProperties(t *testing.T) {
	var turns, first latencyTally
	if got := latencyProperties(&turns, &first); fmt.Sprint(got) != "[[agent_turns 0]]" {
		t.Fatalf("no turns: %v", got)
	}
	turns.add(900, 100, 400, 200, 300) // p50 = 3rd of 5, p95 = 5th
	got := latencyProperties(&turns, &first)
	if want := "[[agent_turns 5] [agent_turn_p50_ms 300] [agent_turn_p95_ms 900] [agent_turn_max_ms 900]]"; fmt.Sprint(got) != want {
		t.Fatalf("turns without first tokens (runs recorded before them): %v, want %s", got, want)
	}
	first.add(50, 10, 20, 40, 30)
	got = latencyProperties(&turns, &first)
	d := validJUnit(t, JUnitSuite{Name: "s", ID: "tinv_1", Tests: 1, Timestamp: time.Unix(1_700_000_000, 0),
		Properties: append([][2]string{{"agent_id", "agent_1"}, {"branch_id", ""}, {"invocation_id", "tinv_1"}, {"status", "completed"}, {"repeat_count", "1"}}, got...)},
		JUnitCase{Name: "t", Classname: "agent_1.llm", Outcome: JUnitPassed})
	want := map[string]string{"agent_turns": "5", "agent_turn_p50_ms": "300", "agent_turn_p95_ms": "900", "agent_turn_max_ms": "900",
		"agent_first_token_p50_ms": "30", "agent_first_token_p95_ms": "50", "agent_first_token_max_ms": "50"}
	for k, v := range want {
		if p, _ := d.Suites[0].Property(k); p != v {
			t.Errorf("property %s = %q, want %q", k, p, v)
		}
	}
}

// A load test's JUnit has its steps as cases, the one that broke the
// budget failed with what broke, a cancelled one skipped: a CI job reading
// it sees the load test's outcome, not an empty green suite.
func TestALoadTestsJUnitIsItsSteps(t *testing.T) {
	inv := &testingv1.Invocation{InvocationId: "tinv_1", AgentId: "agent_1", Status: domain.InvocationCancelled, Title: "Load test: Hours",
		CreatedAtUnix: 1_700_000_000, Load: &testingv1.LoadTest{Steps: []int32{1, 10, 50, 100}, CurrentStep: 2, FirstTokenP95BudgetMs: 400,
			Test: &testingv1.PlannedTest{TestId: "test_1", TestName: "Hours"},
			Results: []*testingv1.LoadStepResult{
				{Callers: 1, Turns: 1, FirstTokenP95Ms: 120, MetBudget: true, StartedAtUnixMs: 1_000, FinishedAtUnixMs: 2_500},
				{Callers: 10, Turns: 10, FailedTurns: 2, FirstTokenP95Ms: 912, MetBudget: false, StartedAtUnixMs: 3_000, FinishedAtUnixMs: 6_000,
					Failures: []*testingv1.LoadFailure{{Reason: "agent endpoint answered nothing: no text and no tool call", Count: 2}}},
			}}}
	var b bytes.Buffer
	if err := writeLoadJUnit(&b, inv); err != nil {
		t.Fatal(err)
	}
	if err := schema(t).Validate(bytes.NewReader(b.Bytes())); err != nil {
		t.Fatalf("not valid against junit-10.xsd: %v\n%s", err, b.Bytes())
	}
	d, err := junitxsd.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	s := d.Suites[0]
	if at, _ := s.Property("broke_budget_at_callers"); s.Tests != "4" || s.Failures != "1" || s.Skipped != "2" || len(s.Cases) != 4 || at != "10" {
		t.Fatalf("suite %+v\n%s", s, b.Bytes())
	}
	broke := s.Cases[1]
	if broke.Name != "step 2: 10 callers" || broke.Time != "3.000" || broke.Failure == nil ||
		!strings.Contains(broke.Failure.Text, "first_token_p95: measured 912 ms, budget 400 ms") || !strings.Contains(broke.Failure.Text, "- 2: agent endpoint answered nothing") {
		t.Fatalf("the broken step: %+v %+v", broke, broke.Failure)
	}
	if s.Cases[0].Failure != nil || s.Cases[0].Skipped != nil || s.Cases[2].Skipped == nil || s.Cases[3].Skipped == nil {
		t.Fatalf("cases %+v", s.Cases)
	}
}
