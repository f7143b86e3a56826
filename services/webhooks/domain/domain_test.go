package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

func locs(t *testing.T, err error) [][]any {
	t.Helper()
	var ve apperr.ValidationErrors
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a validation error", err)
	}
	var out [][]any
	for _, f := range ve {
		out = append(out, f.Loc)
	}
	return out
}

func decodeInput(t *testing.T, s string) Input {
	t.Helper()
	var in Input
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// The validation a schema cannot say: the url's scheme and address, relay
// against url, max_delay against retry_delay. (The bounds the API schema
// says are checked at the edge: services/webhooks/ports.)
func TestValidateCreateNamesEveryBadField(t *testing.T) {
	allowed := func(h string) bool { return h == "127.0.0.1" }
	cases := map[string]struct {
		body string
		loc  []any
	}{
		"url missing":           {`{"events":["call_started"]}`, []any{"body", "url"}},
		"url relative":          {`{"url":"/hook","events":["call_started"]}`, []any{"body", "url"}},
		"url http":              {`{"url":"http://example.com/h","events":["call_started"]}`, []any{"body", "url"}},
		"url ftp":               {`{"url":"ftp://example.com/h","events":["call_started"]}`, []any{"body", "url"}},
		"url no host":           {`{"url":"https:///h","events":["call_started"]}`, []any{"body", "url"}},
		"url private literal":   {`{"url":"https://10.1.2.3/h","events":["call_started"]}`, []any{"body", "url"}},
		"url metadata":          {`{"url":"https://169.254.169.254/latest","events":["call_started"]}`, []any{"body", "url"}},
		"url mapped loopback":   {`{"url":"https://[::ffff:127.0.0.2]/h","events":["call_started"]}`, []any{"body", "url"}},
		"url spaces":            {`{"url":" https://example.com","events":["call_started"]}`, []any{"body", "url"}},
		"url control character": {`{"url":"https://example.com/a\u0000b","events":["call_started"]}`, []any{"body", "url"}},
		"relay with a url":      {`{"relay":true,"url":"https://example.com","events":["call_started"]}`, []any{"body", "url"}},
		"max_delay below delay": {`{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_delay":60,"max_delay":30}}`, []any{"body", "retry_config", "max_delay"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ValidateCreate(decodeInput(t, c.body), allowed)
			got := locs(t, err)
			if !slices.ContainsFunc(got, func(l []any) bool { return equalLoc(l, c.loc) }) {
				t.Fatalf("locs %v, want %v", got, c.loc)
			}
		})
	}
}

func TestValidateUpdateKeepsRelayAndRetryDelays(t *testing.T) {
	cur := Spec{Events: []string{"call_started"}, Active: true, Retry: DefaultRetryPolicy(), Relay: true}
	_, err := ValidateUpdate(decodeInput(t, `{"relay":false}`), cur, nil)
	if got := locs(t, err); len(got) != 1 || !equalLoc(got[0], []any{"body", "relay"}) {
		t.Fatalf("locs %v", got)
	}
	if _, err := ValidateUpdate(decodeInput(t, `{"url":"https://example.com"}`), cur, nil); err == nil {
		t.Fatal("a relay webhook took a url")
	}
	cur.Relay, cur.URL = false, "https://example.com"
	s, err := ValidateUpdate(decodeInput(t, `{"retry_config":{"retry_delay":600}}`), cur, nil)
	if err != nil || s.Retry.RetryDelay != 600 || s.Retry.MaxDelay != 600 {
		t.Fatalf("retry %+v err %v", s.Retry, err)
	}
	cur.Retry.RetryDelay, cur.Retry.MaxDelay = 1, 5
	s, err = ValidateUpdate(decodeInput(t, `{"retry_config":{"retry_delay":10}}`), cur, nil)
	if err != nil || s.Retry.RetryDelay != 10 || s.Retry.MaxDelay != 10 {
		t.Fatalf("a stored max_delay below the new retry_delay is raised to it, no further: %+v err %v", s.Retry, err)
	}
	s, err = ValidateUpdate(decodeInput(t, `{"retry_config":{"retry_delay":3}}`), cur, nil)
	if err != nil || s.Retry.MaxDelay != 5 {
		t.Fatalf("a stored max_delay that still holds is kept: %+v err %v", s.Retry, err)
	}
	s, err = ValidateUpdate(decodeInput(t, `{"retry_config":{"retry_on_status":[503,500,503]},"events":["call_ended","call_ended"]}`), cur, nil)
	if err != nil || !slices.Equal(s.Retry.RetryOnStatus, []int{500, 503}) || !slices.Equal(s.Events, []string{"call_ended"}) {
		t.Fatalf("spec %+v err %v", s, err)
	}
}

func equalLoc(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestValidateCreateDefaultsAndAllowList(t *testing.T) {
	s, err := ValidateCreate(decodeInput(t, `{"url":"https://example.com/h#frag","events":["call_started","call_started","ticket_created"]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != "https://example.com/h" || !slices.Equal(s.Events, []string{"call_started", "ticket_created"}) || !s.Active {
		t.Fatalf("spec %+v", s)
	}
	if d := DefaultRetryPolicy(); s.Retry.MaxRetries != d.MaxRetries || s.Retry.MaxDelay != DefaultMaxDelay || !slices.Equal(s.Retry.RetryOnStatus, DefaultRetryOnStatus) {
		t.Fatalf("retry %+v", s.Retry)
	}
	s, err = ValidateCreate(decodeInput(t, `{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_delay":600,"retry_on_status":[]}}`), nil)
	if err != nil || s.Retry.MaxDelay != 600 || len(s.Retry.RetryOnStatus) != 0 {
		t.Fatalf("spec %+v err %v", s.Retry, err)
	}
	if _, err := ValidateCreate(decodeInput(t, `{"url":"http://127.0.0.1:8080/h","events":["call_started"]}`), func(h string) bool { return h == "127.0.0.1" }); err != nil {
		t.Fatalf("allowed host refused: %v", err)
	}
}

func TestDecide(t *testing.T) {
	p := RetryPolicy{MaxRetries: 2, RetryDelay: 1, MaxDelay: 10, RetryOnStatus: []int{503}}
	cases := []struct {
		o     Outcome
		retry int
		want  Verdict
	}{
		{Outcome{StatusCode: 200}, 0, Delivered},
		{Outcome{StatusCode: 204}, 2, Delivered},
		{Outcome{StatusCode: 503}, 0, Retry},
		{Outcome{StatusCode: 503}, 2, GiveUp},
		{Outcome{StatusCode: 500}, 0, GiveUp},
		{Outcome{StatusCode: 301}, 0, GiveUp},
		{Outcome{StatusCode: 410}, 0, Gone},
		{Outcome{NetworkErr: true}, 1, Retry},
		{Outcome{NetworkErr: true}, 2, GiveUp},
		{Outcome{Refused: true}, 0, GiveUp},
	}
	for _, c := range cases {
		if got := p.Decide(c.o, c.retry); got != c.want {
			t.Errorf("Decide(%+v, %d) = %v, want %v", c.o, c.retry, got, c.want)
		}
	}
}

func TestDelay(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	fixed := RetryPolicy{RetryDelay: 2, MaxDelay: 5}
	if d := fixed.Delay(3, 0, time.Second, rnd); d != 2*time.Second {
		t.Fatalf("fixed delay %s", d)
	}
	if d := fixed.Delay(0, 4*time.Second, time.Second, rnd); d != 4*time.Second {
		t.Fatalf("Retry-After not honoured: %s", d)
	}
	if d := fixed.Delay(0, time.Hour, time.Second, rnd); d != 5*time.Second {
		t.Fatalf("Retry-After not capped at max_delay: %s", d)
	}
	exp := RetryPolicy{RetryDelay: 1, MaxDelay: 60, ExponentialBackoff: true}
	for retry := range 8 {
		want := min(time.Duration(1<<retry)*time.Second, 60*time.Second)
		for range 50 {
			d := exp.Delay(retry, 0, time.Second, rnd)
			if d < want/2 || d > want {
				t.Fatalf("retry %d: delay %s outside [%s, %s]", retry, d, want/2, want)
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if d := ParseRetryAfter("7", now, time.Second); d != 7*time.Second {
		t.Fatal(d)
	}
	if d := ParseRetryAfter(now.Add(30*time.Second).Format(http.TimeFormat), now, time.Second); d != 30*time.Second {
		t.Fatal(d)
	}
	for _, bad := range []string{"", "-1", "soon", now.Add(-time.Hour).Format(http.TimeFormat)} {
		if d := ParseRetryAfter(bad, now, time.Second); d != 0 {
			t.Fatalf("%q: %s", bad, d)
		}
	}
}

func TestSignature(t *testing.T) {
	// RFC 4231 test case 2.
	sig := Sign([]byte("Jefe"), []byte("what do ya want for nothing?"))
	if sig != "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" {
		t.Fatal(sig)
	}
	if !Verify([]byte("Jefe"), []byte("what do ya want for nothing?"), sig) || Verify([]byte("x"), []byte("y"), sig) {
		t.Fatal("verify")
	}
}

func TestParseIngest(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := func(s string) *string { return &s }
	env, err := ParseIngest(IngestInput{Event: "call_ended", Timestamp: ts("2026-01-02T05:04:05+02:00"), Data: json.RawMessage(`{ "call_id": "c",
		"extra": [1] }`)}, now)
	if err != nil || env.Timestamp != "2026-01-02T03:04:05.000Z" || env.Event != "call_ended" || string(env.Data) != `{"call_id":"c","extra":[1]}` {
		t.Fatalf("%+v %v", env, err)
	}
	env, err = ParseIngest(IngestInput{Event: "quota_exceeded", Data: json.RawMessage(`{}`)}, now)
	if err != nil || env.Timestamp != "2026-01-02T03:04:05.000Z" {
		t.Fatalf("%+v %v", env, err)
	}
	for _, ok := range []string{"1970-01-01T00:00:00Z", "2026-01-03T03:04:05Z", "2026-01-03T05:04:05+02:00"} {
		if _, err := ParseIngest(IngestInput{Event: "call_ended", Timestamp: ts(ok), Data: json.RawMessage(`{}`)}, now); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"yesterday", "2026-01-02T03:04:05", "2026-02-30T03:04:05Z", "", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "1970-01-01T00:30:00+01:00", "2026-01-03T03:04:05.001Z", "2027-01-02T03:04:05Z"} {
		_, err := ParseIngest(IngestInput{Event: "call_ended", Timestamp: ts(bad), Data: json.RawMessage(`{}`)}, now)
		if got := locs(t, err); len(got) != 1 || !equalLoc(got[0], []any{"body", "timestamp"}) {
			t.Errorf("%q: locs %v", bad, got)
		}
	}
}

func TestCatalogListsEveryEvent(t *testing.T) {
	var names []string
	for _, e := range Catalog {
		names = append(names, e.Name)
		if e.Group == "" || e.Description == "" {
			t.Errorf("%s is not described", e.Name)
		}
	}
	if !slices.Equal(names, KnownEvents()) {
		t.Fatalf("catalog %v, events %v", names, KnownEvents())
	}
}

// request_headers: the platform's headers (signatures, content type,
// host, transport headers) are refused whatever their case, as are CR/LF
// and other control characters, names that are not tokens, and too many
// or too large; a null drops a header.
func TestRequestHeaders(t *testing.T) {
	s := func(v string) *string { return &v }
	var ok apperr.Validator
	got := CheckRequestHeaders(&ok, map[string]*string{"X-Team": s("qa"), "Authorization": s("Bearer t"), "X-Gone": nil}, nil, "body", "request_headers")
	if ok.Err() != nil || len(got) != 2 || got["X-Team"] != "qa" || got["Authorization"] != "Bearer t" {
		t.Fatalf("valid headers: %v %v", got, ok.Err())
	}
	// Sent back as shown, a hidden value keeps the stored one.
	stored := map[string]string{"Authorization": "Bearer t", "X-Team": "qa"}
	got = CheckRequestHeaders(&ok, map[string]*string{"Authorization": s(HiddenHeaderValue), "X-Team": s("ops")}, stored, "body", "request_headers")
	if ok.Err() != nil || len(got) != 2 || got["Authorization"] != "Bearer t" || got["X-Team"] != "ops" {
		t.Fatalf("a hidden value sent back: %v %v", got, ok.Err())
	}
	if shown := HideHeaderValues(stored); len(shown) != 2 || shown["Authorization"] != HiddenHeaderValue || shown["X-Team"] != HiddenHeaderValue {
		t.Fatalf("shown: %v", shown)
	}
	for name, in := range map[string]map[string]*string{
		"content type":        {"content-TYPE": s("text/plain")},
		"host":                {"Host": s("evil.example")},
		"platform signature":  {"X-Service-Signature": s("sha256=00")},
		"sdk signature":       {"ElevenLabs-Signature": s("t=1,v0=00")},
		"standard signature":  {"webhook-signature": s("v1,AA==")},
		"standard id":         {"Webhook-Id": s("x")},
		"transport":           {"Transfer-Encoding": s("chunked")},
		"CR LF in a value":    {"X-A": s("a\r\nX-Injected: 1")},
		"LF in a value":       {"X-A": s("a\nb")},
		"NUL in a value":      {"X-A": s("a\x00b")},
		"not a token":         {"X A": s("1")},
		"colon in a name":     {"X-A:": s("1")},
		"empty name":          {"": s("1")},
		"oversize value":      {"X-A": s(strings.Repeat("a", 1025))},
		"same name two cases": {"X-A": s("1"), "x-a": s("2")},
		"too many":            headers(21, "1"),
		"too large together":  headers(10, strings.Repeat("v", 1000)),
		"hidden, none stored": {"X-New": s(HiddenHeaderValue)},
	} {
		var v apperr.Validator
		CheckRequestHeaders(&v, in, map[string]string{"X-Team": "qa"}, "body", "request_headers")
		if v.Err() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// headers are n headers X-H0, X-H1, … each of value v.
func headers(n int, v string) map[string]*string {
	out := map[string]*string{}
	for i := range n {
		out[fmt.Sprintf("X-H%d", i)] = &v
	}
	return out
}

// agent_qa stands for every ticket event and test invocation outcome;
// setting the workspace-level events keeps the events no workspace-level
// type covers.
func TestWorkspaceEvents(t *testing.T) {
	all := WithWorkspaceEvents([]string{"call_started", "ticket_created"}, []string{"agent_qa"})
	if len(all) != 1+len(TicketEvents)+len(InvocationEvents) || all[0] != "call_started" {
		t.Fatalf("with agent_qa: %v", all)
	}
	if got := WorkspaceEventsOf(all); len(got) != 1 || got[0] != "agent_qa" {
		t.Fatalf("types of %v: %v", all, got)
	}
	none := WithWorkspaceEvents(all, []string{})
	if len(none) != 1 || none[0] != "call_started" || len(WorkspaceEventsOf(none)) != 0 {
		t.Fatalf("without: %v", none)
	}
	if got := WorkspaceEventsOf([]string{"ticket_created"}); len(got) != 0 {
		t.Fatalf("a part of agent_qa is not agent_qa: %v", got)
	}
}

// A failure log counts the failures since the latest success, whatever
// order the attempt records arrive in, from when the webhook was last
// enabled, keeping at most MaxAutoDisableFailures of them.
func TestFailureLog(t *testing.T) {
	var l FailureLog
	for _, at := range []int64{5000, 1000, 3000, 2000} { // out of order
		l.Observe(false, 500, at)
	}
	l.Observe(true, 200, 2500) // ends the failures at 1000 and 2000
	run := l.Run(time.UnixMilli(0))
	if run.Failures != 2 || run.First.UnixMilli() != 3000 || run.Latest.UnixMilli() != 5000 || run.LastAt.UnixMilli() != 5000 {
		t.Fatalf("run: %+v", run)
	}
	l.Observe(false, 404, 2200) // before the success: shown as a failure, not counted
	if run := l.Run(time.UnixMilli(0)); run.Failures != 2 || run.LastCode != 500 {
		t.Fatalf("a failure older than the success: %+v", run)
	}
	if run := l.Run(time.UnixMilli(4000)); run.Failures != 1 || run.First.UnixMilli() != 5000 {
		t.Fatalf("counted from enabling: %+v", run)
	}
	for i := range 2 * MaxAutoDisableFailures {
		l.Observe(false, 0, int64(10_000+i))
	}
	if run := l.Run(time.UnixMilli(0)); run.Failures != MaxAutoDisableFailures || run.LastCode != 0 {
		t.Fatalf("capped: %d", run.Failures)
	}
	rule := AutoDisable{Failures: 3, Over: time.Second}
	if rule.Trips(Run{Failures: 3, First: time.UnixMilli(0), Latest: time.UnixMilli(999)}) || !rule.Trips(Run{Failures: 3, First: time.UnixMilli(0), Latest: time.UnixMilli(1000)}) ||
		(AutoDisable{}).Trips(Run{Failures: 1000, Latest: time.UnixMilli(1 << 40)}) {
		t.Fatal("Trips")
	}
}
