package domain

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"slices"
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
		"events missing":        {`{"url":"https://example.com"}`, []any{"body", "events"}},
		"events empty":          {`{"url":"https://example.com","events":[]}`, []any{"body", "events"}},
		"events unknown":        {`{"url":"https://example.com","events":["call_started","nope"]}`, []any{"body", "events", 1}},
		"secret short":          {`{"url":"https://example.com","events":["call_started"],"secret":"short"}`, []any{"body", "secret"}},
		"secret whitespace":     {`{"url":"https://example.com","events":["call_started"],"secret":"a secret with spaces in it"}`, []any{"body", "secret"}},
		"max_retries high":      {`{"url":"https://example.com","events":["call_started"],"retry_config":{"max_retries":11}}`, []any{"body", "retry_config", "max_retries"}},
		"max_retries negative":  {`{"url":"https://example.com","events":["call_started"],"retry_config":{"max_retries":-1}}`, []any{"body", "retry_config", "max_retries"}},
		"retry_delay zero":      {`{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_delay":0}}`, []any{"body", "retry_config", "retry_delay"}},
		"retry_delay huge":      {`{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_delay":3601}}`, []any{"body", "retry_config", "retry_delay"}},
		"max_delay below delay": {`{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_delay":60,"max_delay":30}}`, []any{"body", "retry_config", "max_delay"}},
		"max_delay huge":        {`{"url":"https://example.com","events":["call_started"],"retry_config":{"max_delay":86401}}`, []any{"body", "retry_config", "max_delay"}},
		"status out of range":   {`{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_on_status":[500,200]}}`, []any{"body", "retry_config", "retry_on_status", 1}},
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

func TestForbiddenAddr(t *testing.T) {
	bad := []string{"127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "100.64.0.1", "169.254.169.254", "169.254.1.1",
		"0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1"}
	for _, s := range bad {
		if _, forbidden := ForbiddenAddr(netip.MustParseAddr(s)); !forbidden {
			t.Errorf("%s allowed", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"} {
		if reason, forbidden := ForbiddenAddr(netip.MustParseAddr(s)); forbidden {
			t.Errorf("%s refused as %s", s, reason)
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
	ev := func(s string) IngestInput {
		var in IngestInput
		if err := json.Unmarshal([]byte(s), &in); err != nil {
			t.Fatal(err)
		}
		return in
	}
	env, err := ParseIngest(ev(`{"event":"call_ended","timestamp":"2026-01-02T05:04:05+02:00","data":{"call_id":"c","duration_seconds":12,"satisfaction_score":4.5,"extra":[1]}}`), now)
	if err != nil || env.Timestamp != "2026-01-02T03:04:05.000Z" || env.Event != "call_ended" {
		t.Fatalf("%+v %v", env, err)
	}
	env, err = ParseIngest(ev(`{"event":"quota_exceeded","data":{}}`), now)
	if err != nil || env.Timestamp != "2026-01-02T03:04:05.000Z" {
		t.Fatalf("%+v %v", env, err)
	}
	bad := map[string][]any{
		`{"data":{}}`:                                                                           {"body", "event"},
		`{"event":"nope","data":{}}`:                                                            {"body", "event"},
		`{"event":"call_ended"}`:                                                                {"body", "data"},
		`{"event":"call_ended","data":[1]}`:                                                     {"body", "data"},
		`{"event":"call_ended","timestamp":"yesterday","data":{}}`:                              {"body", "timestamp"},
		`{"event":"call_ended","data":{"duration_seconds":1.5}}`:                                {"body", "data", "duration_seconds"},
		`{"event":"call_ended","data":{"duration_seconds":"12"}}`:                               {"body", "data", "duration_seconds"},
		`{"event":"call_ended","data":{"transcript_available":"yes"}}`:                          {"body", "data", "transcript_available"},
		`{"event":"call_started","data":{"call_id":7}}`:                                         {"body", "data", "call_id"},
		`{"event":"call_started","data":{"metadata":{"call_queue":1}}}`:                         {"body", "data", "metadata", "call_queue"},
		`{"event":"conversation_ended","data":{"topics_discussed":["a",1]}}`:                    {"body", "data", "topics_discussed"},
		`{"event":"conversation_ended","data":{"sentiment_analysis":{"sentiment_score":"hi"}}}`: {"body", "data", "sentiment_analysis", "sentiment_score"},
		`{"event":"escalation_triggered","data":{"target_queue":false}}`:                        {"body", "data", "target_queue"},
	}
	for body, loc := range bad {
		_, err := ParseIngest(ev(body), now)
		got := locs(t, err)
		if !slices.ContainsFunc(got, func(l []any) bool { return equalLoc(l, loc) }) {
			t.Errorf("%s: locs %v, want %v", body, got, loc)
		}
	}
}

func TestSampleDataIsValid(t *testing.T) {
	for _, e := range PlatformEvents {
		if err := CheckPayload(e, SampleData(e)); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
}

// FuzzParseIngest: any body either fails validation or yields an envelope
// that re-validates and marshals.
func FuzzParseIngest(f *testing.F) {
	for _, s := range []string{
		`{"event":"call_ended","data":{"duration_seconds":12}}`,
		`{"event":"call_started","timestamp":"2026-01-02T03:04:05Z","data":{"metadata":{"call_queue":"q"}}}`,
		`{"event":"conversation_ended","data":{"topics_discussed":["a"],"sentiment_analysis":{"sentiment_score":1e3}}}`,
		`{"event":1}`, `[]`, `{"data":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var in IngestInput
		if json.Unmarshal(b, &in) != nil {
			return
		}
		env, err := ParseIngest(in, time.Unix(0, 0))
		if err != nil {
			var ve apperr.ValidationErrors
			if !errors.As(err, &ve) || len(ve) == 0 {
				t.Fatalf("non-validation error %v", err)
			}
			return
		}
		if !IsPlatformEvent(env.Event) || CheckPayload(env.Event, env.Data) != nil {
			t.Fatalf("accepted envelope invalid: %+v", env)
		}
		if _, err := json.Marshal(env); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzValidateCreate: an accepted body always gives a webhook within the
// documented bounds.
func FuzzValidateCreate(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://example.com/h","events":["call_started"]}`,
		`{"url":"https://example.com","events":["call_started"],"retry_config":{"max_retries":3,"retry_delay":2,"max_delay":10,"retry_on_status":[500]}}`,
		`{"url":"https://[::1]/","events":["x"]}`, `{"url":"http://127.0.0.1:1/","events":["call_ended"],"secret":"0123456789abcdef"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var in Input
		if json.Unmarshal(b, &in) != nil {
			return
		}
		s, err := ValidateCreate(in, func(h string) bool { return h == "127.0.0.1" })
		if err != nil {
			return
		}
		r := s.Retry
		if s.URL == "" || len(s.Events) == 0 || r.MaxRetries < 0 || r.MaxRetries > MaxRetriesMax || r.RetryDelay < 1 ||
			r.MaxDelay < r.RetryDelay || r.MaxDelay > MaxDelayMax {
			t.Fatalf("accepted out-of-bounds spec %+v", s)
		}
		for _, e := range s.Events {
			if !IsKnownEvent(e) {
				t.Fatalf("accepted unknown event %q", e)
			}
		}
	})
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
