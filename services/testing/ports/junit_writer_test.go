package ports

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strings"
	"testing"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

func TestSeconds(t *testing.T) {
	for ms, want := range map[int64]string{0: "0.000", 7: "0.007", 1234: "1.234", 60_000: "60.000", -5: "0.000", 12_345_678: "12345.678"} {
		if got := Seconds(ms); got != want {
			t.Errorf("Seconds(%d) = %q, want %q", ms, got, want)
		}
	}
}

// hostile is text a test name or a judge's rationale may hold.
const hostile = "a\"b<c>&d'e ]]> <![CDATA[x]]> \x00\x01\x08\x0b\x0c\x1b\x7f\ufffe tab\there\r\nline2 \xff end"

// xmlSafe is hostile as an XML 1.0 document can carry it: every character
// XML forbids replaced by U+FFFD.
func xmlSafe(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\ufffd") {
		ok := r == 0x09 || r == 0x0A || r == 0x0D || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000
		if !ok {
			r = '\ufffd'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// The writer escapes every attribute and text: a hostile name and
// rationale come back intact (less the characters XML forbids) from a
// strict XML parser, and nothing in them opens markup.
func TestJUnitWriterEscapesHostileText(t *testing.T) {
	var b bytes.Buffer
	j := NewJUnitWriter(&b)
	j.Begin(JUnitSuite{Name: hostile, ID: "tinv_1", Tests: 2, Failures: 1, Errors: 1, TimeMs: 1500,
		Timestamp: time.Unix(1_700_000_000, 0), Properties: [][2]string{{"status", hostile}}})
	if err := j.Case(JUnitCase{Name: hostile, Classname: "agent_1.llm", TimeMs: 1000, Outcome: JUnitFailure,
		Message: hostile, Text: hostile + "\n- " + hostile}); err != nil {
		t.Fatal(err)
	}
	if err := j.Case(JUnitCase{Name: "x", Classname: "agent_1.llm", TimeMs: 500, Outcome: JUnitError, Message: "boom", Text: hostile}); err != nil {
		t.Fatal(err)
	}
	if err := j.End(); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	if strings.Contains(doc, "]]>") || strings.Contains(doc, "<![CDATA[") || strings.ContainsAny(doc, "\x00\x01\x08\x0b\x0c\x1b") {
		t.Fatalf("unescaped text in the document:\n%s", doc)
	}
	var got struct {
		Suite struct {
			Name  string `xml:"name,attr"`
			Props []struct {
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = true
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, doc)
	}
	safe := xmlSafe(hostile)
	s := got.Suite
	if s.Name != safe || s.Props[0].Value != safe || len(s.Cases) != 2 || s.Cases[0].Name != safe {
		t.Fatalf("attributes changed:\n%q\n%q", s.Name, safe)
	}
	f := s.Cases[0].Failure
	if f == nil || f.Type != "failure" || f.Text != safe+"\n- "+safe {
		t.Fatalf("failure: %+v", f)
	}
	if want := xmlSafe(`a"b<c>&d'e ]]> <![CDATA[x]]> ` + "\x00\x01\x08\x0b\x0c\x1b\x7f\ufffe tab\there"); f.Message != want {
		t.Fatalf("message is the first line: %q, want %q", f.Message, want)
	}
}

func TestJUnitCaseOf(t *testing.T) {
	inv := &testingv1.Invocation{InvocationId: "tinv_1", AgentId: "agent_1", RepeatCount: 3, Status: domain.InvocationRunning,
		Tests: []*testingv1.PlannedTest{{TestId: "test_a", TestName: "Hours", TestType: "llm"}, {TestId: "test_b", TestName: "Book", TestType: "tool"}}}
	passed := &testingv1.RunResult{Status: domain.RunPassed, StartedAtUnixMs: 1000, FinishedAtUnixMs: 3250}
	failed := &testingv1.RunResult{Status: domain.RunFailed, ConditionResult: domain.ConditionFailure, StartedAtUnixMs: 1, FinishedAtUnixMs: 2,
		RationaleSummary: "Missing: nine, five.\nSecond line.", RationaleMessages: []string{"found: hours", "missing: nine"}}
	errored := &testingv1.RunResult{Status: domain.RunFailed, ConditionResult: domain.ConditionUnknown,
		Error: "The model failed: 503", RationaleSummary: "The model failed: 503"}
	cases := []struct {
		idx     int
		res     *testingv1.RunResult
		unrun   string
		name    string
		class   string
		outcome string
		message string
		text    string
		ms      int64
	}{
		{0, passed, "", "Hours (repeat 1/3)", "agent_1.llm", JUnitPassed, "", "", 2250},
		{4, failed, "", "Book (repeat 2/3)", "agent_1.tool", JUnitFailure, "Missing: nine, five.\nSecond line.",
			"condition_result: failure\nsummary: Missing: nine, five.\nSecond line.\n- found: hours\n- missing: nine\n", 1},
		{2, errored, "", "Hours (repeat 3/3)", "agent_1.llm", JUnitError, "The model failed: 503",
			"error: The model failed: 503\ncondition_result: unknown\n", 0},
		{5, nil, domain.RunPending, "Book (repeat 3/3)", "agent_1.tool", JUnitSkipped, "The run is pending.", "", 0},
		{1, nil, domain.RunCancelled, "Hours (repeat 2/3)", "agent_1.llm", JUnitSkipped, "The run was cancelled before it had a result.", "", 0},
		{3, &testingv1.RunResult{Status: domain.RunCancelled}, "", "Book (repeat 1/3)", "agent_1.tool", JUnitSkipped, "The run was cancelled.", "", 0},
	}
	for _, c := range cases {
		got := JUnitCaseOf(inv, JUnitNames(inv), c.idx, c.res, c.unrun)
		want := JUnitCase{Name: c.name, Classname: c.class, Outcome: c.outcome, Message: c.message, Text: c.text, TimeMs: c.ms}
		if got != want {
			t.Errorf("run %d:\n got %+v\nwant %+v", c.idx, got, want)
		}
	}
	inv.RepeatCount = 1
	if got := JUnitCaseOf(inv, JUnitNames(inv), 1, passed, ""); got.Name != "Book" {
		t.Errorf("one repeat: %q", got.Name)
	}
}

// No two cases of an invocation share a classname and a name, which CI
// report tools would merge: a test listed twice, or two tests of one name,
// are told apart by id and place; a name used once is left as it is.
func TestJUnitNamesAreUnique(t *testing.T) {
	inv := &testingv1.Invocation{Tests: []*testingv1.PlannedTest{
		{TestId: "test_a", TestName: "Hours", TestType: "llm"}, {TestId: "test_a", TestName: "Hours", TestType: "llm"},
		{TestId: "test_b", TestName: "Hours", TestType: "llm"}, {TestId: "test_c", TestName: "Hours", TestType: "tool"},
		{TestId: "test_d", TestName: "Book", TestType: "llm"},
	}}
	want := []string{"Hours (test_a) #1", "Hours (test_a) #2", "Hours (test_b)", "Hours", "Book"}
	if got := JUnitNames(inv); !slices.Equal(got, want) {
		t.Fatalf("names %q, want %q", got, want)
	}
}
