package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
)

type body struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Tests []struct {
		ID string `json:"test_id"`
	} `json:"tests"`
}

func decode(t *testing.T, s string, max int64) error {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(s))
	var b body
	return DecodeJSON(WithBodyLimit(r, max), &b)
}

func TestDecodeJSON(t *testing.T) {
	if err := decode(t, `{"name":"a","count":2}`, 0); err != nil {
		t.Fatalf("valid body rejected: %v", err)
	}
	var e *Error
	if err := decode(t, `{"name":`, 0); !errors.As(err, &e) || StatusOf(e) != 400 || e.Status != "malformed_json" {
		t.Fatalf("malformed JSON: got %v", err)
	}
	for _, trailing := range []string{`{"a":1} {"b":2}`, `{"name":"x"}}`, `{"name":"x"}]`, `{"name":"x"} x`} {
		if err := decode(t, trailing, 0); !errors.As(err, &e) || StatusOf(e) != 400 {
			t.Fatalf("trailing data %s: got %v", trailing, err)
		}
	}
	if err := decode(t, "{\"name\":\"x\"}\n\t ", 0); err != nil {
		t.Fatalf("trailing white space rejected: %v", err)
	}
	if err := decode(t, `{"name":"`+strings.Repeat("x", 100)+`"}`, 50); !errors.As(err, &e) || StatusOf(e) != 413 {
		t.Fatalf("oversized: got %v", err)
	}
	var v ValidationErrors
	if err := decode(t, `{"count":"two"}`, 0); !errors.As(err, &v) || len(v) != 1 || v[0].Loc[1] != "count" {
		t.Fatalf("wrong type: got %#v", err)
	}
	if err := decode(t, `{"tests":[{"test_id":5}]}`, 0); !errors.As(err, &v) || v[0].Loc[0] != "body" {
		t.Fatalf("nested wrong type: got %#v", err)
	}
	if err := decode(t, ``, 0); !errors.As(err, &v) || v[0].Type != "missing" {
		t.Fatalf("empty body: got %#v", err)
	}
}

func TestWriteErrorShapes(t *testing.T) {
	h := WithRequestID(slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/nf":
			WriteError(w, r, apperr.AgentNotFound)
		case "/val":
			var v Validator
			v.Add("too small", "greater_than_equal", "query", "page_size")
			WriteError(w, r, v.Err())
		case "/internal":
			WriteError(w, r, errors.New("secret database detail"))
		}
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/nf", nil))
	var app struct {
		Detail struct{ Status, Message, RequestID string } `json:"detail"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &app); err != nil || rec.Code != 404 || app.Detail.Status != "agent_not_found" {
		t.Fatalf("404 body: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"request_id":"`+rec.Header().Get(HeaderRequestID)+`"`) || rec.Header().Get(HeaderRequestID) == "" {
		t.Fatalf("request id missing or different: %s / %q", rec.Body, rec.Header().Get(HeaderRequestID))
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/val", nil))
	if rec.Code != 422 || !strings.Contains(rec.Body.String(), `"loc":["query","page_size"]`) {
		t.Fatalf("422 body: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/internal", nil))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "secret") {
		t.Fatalf("500 leaks or wrong: %d %s", rec.Code, rec.Body)
	}
}

func TestRequestIDAcceptedOrReplaced(t *testing.T) {
	h := WithRequestID(slog.Default(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(HeaderRequestID, "abc-123")
	h.ServeHTTP(rec, r)
	if rec.Header().Get(HeaderRequestID) != "abc-123" {
		t.Fatalf("well-formed id not kept: %q", rec.Header().Get(HeaderRequestID))
	}
	rec = httptest.NewRecorder()
	r = httptest.NewRequest("GET", "/", nil)
	r.Header.Set(HeaderRequestID, "bad id\x01")
	h.ServeHTTP(rec, r)
	if got := rec.Header().Get(HeaderRequestID); !strings.HasPrefix(got, "req_") {
		t.Fatalf("malformed id not replaced: %q", got)
	}
}

func TestRecoverWritesA500Body(t *testing.T) {
	h := Recover(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"status":"internal_error"`) {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"name":"a","count":1,"tests":[{"test_id":"t"}]}`))
	f.Add([]byte(`{"count":1e400}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(data)))
		var b body
		err := DecodeJSON(WithBodyLimit(r, 1<<16), &b)
		if err == nil {
			return
		}
		var e *Error
		var v ValidationErrors
		if !errors.As(err, &e) && !errors.As(err, &v) {
			t.Fatalf("error is neither a client error nor a validation error: %v", err)
		}
		if e != nil && (StatusOf(e) < 400 || StatusOf(e) > 499) {
			t.Fatalf("non-4xx for bad input: %d", StatusOf(e))
		}
	})
}

func TestTraceparentKeptOrStarted(t *testing.T) {
	var seen string
	h := WithTraceparent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = Traceparent(r.Context()) }))
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("traceparent", tp)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if seen != tp {
		t.Fatalf("incoming traceparent not kept: %q", seen)
	}
	r = httptest.NewRequest("GET", "/", nil)
	r.Header.Set("traceparent", "garbage")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if !tracing.WellFormed(seen) || seen == tp {
		t.Fatalf("no fresh trace started: %q", seen)
	}
}

// A trace the gateway starts is sampled only when its span is recorded:
// with no tracer installed nobody records it, and the traceparent passed
// on says so; with one, it is sampled. A caller's decision is kept.
func TestAStartedTraceIsSampledOnlyWhenRecorded(t *testing.T) {
	var seen string
	h := WithTraceparent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = Traceparent(r.Context()) }))
	started := func() string {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		return seen
	}
	if tp := started(); !tracing.WellFormed(tp) || !strings.HasSuffix(tp, "-00") {
		t.Fatalf("no tracer installed: started %q, want an unsampled trace", tp)
	}
	const callers = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("traceparent", callers)
	if h.ServeHTTP(httptest.NewRecorder(), r); seen != callers {
		t.Fatalf("the caller's sampled trace became %q", seen)
	}

	useTracer(t, sdktrace.NewTracerProvider())
	if tp := started(); !tracing.WellFormed(tp) || !strings.HasSuffix(tp, "-01") {
		t.Fatalf("a recording tracer: started %q, want a sampled trace", tp)
	}
}

func TestDecodeIntoAnObjectRefusesOtherJSON(t *testing.T) {
	var in struct {
		Name string `json:"name"`
	}
	for _, body := range []string{`null`, `[]`, `"x"`, `42`, ` true `} {
		err := DecodeBytes([]byte(body), &in)
		var v ValidationErrors
		if !errors.As(err, &v) || v[0].Type != "model_type" {
			t.Errorf("body %s: %v, want a 422 model_type", body, err)
		}
	}
	if err := DecodeBytes([]byte(` {"name":"a"}`), &in); err != nil || in.Name != "a" {
		t.Errorf("object body: %v %+v", err, in)
	}
	var list []int
	if err := DecodeBytes([]byte(`[1,2]`), &list); err != nil || len(list) != 2 {
		t.Errorf("a list target still takes a list: %v", err)
	}
}

func TestBoundStringsNamesEveryLongString(t *testing.T) {
	long := strings.Repeat("é", 11)
	doc := `{"a":"short","b":["ok","` + long + `"],"c":{"` + long + `":{"d":"` + long + `"}}}`
	var v Validator
	v.BoundStrings([]byte(doc), 10, "body", "config")
	var errs ValidationErrors
	if !errors.As(v.Err(), &errs) || len(errs) != 3 {
		t.Fatalf("got %v, want three failures", v.Err())
	}
	locs := map[string]bool{}
	for _, e := range errs {
		b, _ := json.Marshal(e.Loc)
		locs[string(b)] = true
	}
	for _, want := range []string{`["body","config","b",1]`, `["body","config","c"]`, `["body","config","c","` + long + `","d"]`} {
		if !locs[want] {
			t.Errorf("no failure at %s: %v", want, locs)
		}
	}
	var ok Validator
	ok.BoundStrings([]byte(`{"a":"`+strings.Repeat("é", 10)+`"}`), 10, "body")
	ok.BoundStrings(nil, 10, "body")
	if ok.Err() != nil {
		t.Fatalf("strings at the bound refused: %v", ok.Err())
	}
}

// A handler that sets a status after its body began (failing mid-body)
// changes nothing and makes the server log nothing: the first status
// stands, and is the one logged.
func TestASecondStatusIsDropped(t *testing.T) {
	var serverLog strings.Builder
	var accessLog strings.Builder
	h := WithRequestID(slog.New(slog.NewTextHandler(&accessLog, nil)), AccessLog(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		_, _ = w.Write([]byte("partial"))
		w.WriteHeader(http.StatusInternalServerError)
	})))
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(&serverLog, "", 0)
	srv.Start()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "partial" || serverLog.Len() > 0 || !strings.Contains(accessLog.String(), "status=200") {
		t.Fatalf("got %d %q; server logged %q; access log %s", resp.StatusCode, b, serverLog.String(), accessLog.String())
	}
}

// A 422 lists at most MaxListedErrors entries, then says how many more
// there are: many wrong items in a small body are not answered at fifty
// times its size.
func TestAValidationAnswerIsBounded(t *testing.T) {
	var v Validator
	for i := range 5000 {
		v.Add("Field required", "missing", "body", "transcript", i, "time_in_call_secs")
	}
	rec := httptest.NewRecorder()
	WriteError(rec, httptest.NewRequest("POST", "/", nil), v.Err())
	var body struct {
		Detail []FieldError `json:"detail"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 422 {
		t.Fatalf("%d %v", rec.Code, err)
	}
	last := body.Detail[len(body.Detail)-1]
	if len(body.Detail) != MaxListedErrors+1 || last.Type != "too_many_errors" || !strings.Contains(last.Msg, "4900 more") ||
		fmt.Sprint(last.Loc) != fmt.Sprint([]any{"body", "transcript", float64(MaxListedErrors), "time_in_call_secs"}) {
		t.Fatalf("%d entries, the last %+v", len(body.Detail), last)
	}
	if body.Detail[MaxListedErrors-1].Type != "missing" {
		t.Fatalf("the listed ones: %+v", body.Detail[MaxListedErrors-1])
	}
}
