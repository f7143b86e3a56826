package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// The edge checks every operation's body and query before a service sees
// them: whatever a caller sends, the answer is the body let through or a
// caller's error naming where it is wrong (never a panic, never a failure
// of ours, which would be a 500).

// FuzzCheckBody sends any bytes as the body of any operation that takes
// one.
func FuzzCheckBody(f *testing.F) {
	exs, err := examples()
	if err != nil {
		f.Fatal(err)
	}
	for i, op := range Operations {
		if op.Request == "" {
			continue
		}
		if ex := exs[op.Name].Request; ex != nil {
			b, _ := json.Marshal(ex)
			f.Add(uint16(i), b)
		}
		for _, b := range []string{`{}`, `[]`, `null`, `{"a":1e400}`, `{"name":"\ud800"}`, `{"tests":[{}]}`, `{"Name":"x","name":"y"}`} {
			f.Add(uint16(i), []byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, i uint16, body []byte) {
		op := Operations[int(i)%len(Operations)]
		r := httptest.NewRequest(op.Method, "/", bytes.NewReader(body))
		err := CheckBody(r, op)
		callersFault(t, op, err, "body")
		passed, readErr := io.ReadAll(r.Body)
		if readErr != nil {
			t.Fatalf("%s: the body is not readable again: %v", op.Name, readErr)
		}
		if err != nil || !json.Valid(body) {
			return
		}
		// What it let through is JSON, and is let through again as it is.
		if !json.Valid(passed) {
			t.Fatalf("%s: let %q through as %q, not JSON", op.Name, body, passed)
		}
		// The handler decodes what the schema check let through without
		// checking its values again (apperr.DecodeCheckedJSON): a second
		// check must change nothing.
		if checked, err := apperr.CheckJSONValues(passed, "body"); op.Request != "" && (err != nil || !bytes.Equal(checked, passed)) {
			t.Fatalf("%s: let %q through as %q, whose values check again as %q, %v", op.Name, body, passed, checked, err)
		}
		again := httptest.NewRequest(op.Method, "/", bytes.NewReader(passed))
		if err := CheckBody(again, op); err != nil {
			t.Fatalf("%s: let %q through as %q, which it then refuses: %v", op.Name, body, passed, err)
		}
	})
}

// FuzzCheckQuery sends any query string to any operation that documents
// query parameters.
func FuzzCheckQuery(f *testing.F) {
	for i, op := range Operations {
		if len(op.Query) == 0 {
			continue
		}
		for _, q := range []string{"", "page_size=10", "page_size=0", "page_size=1e3", "cursor=%00", "status=open&status=x", "limit=-1&limit=2"} {
			f.Add(uint16(i), q)
		}
		for _, p := range op.Query {
			f.Add(uint16(i), url.Values{p: {"1"}}.Encode())
			f.Add(uint16(i), url.Values{p: {"", "true", "x"}}.Encode())
		}
	}
	f.Fuzz(func(t *testing.T, i uint16, query string) {
		op := Operations[int(i)%len(Operations)]
		r := httptest.NewRequest(op.Method, "/", nil)
		r.URL.RawQuery = query
		callersFault(t, op, CheckQuery(r, op), "query")
	})
}

// callersFault fails unless err is nil or an error the caller made: a
// 422 naming the fields at fault (where, then the field), or another
// error of the caller's own kind.
func callersFault(t *testing.T, op Operation, err error, where string) {
	t.Helper()
	if err == nil {
		return
	}
	var fields apperr.ValidationErrors
	if errors.As(err, &fields) {
		if len(fields) == 0 {
			t.Fatalf("%s: a validation error naming no field", op.Name)
		}
		for _, fe := range fields {
			if len(fe.Loc) == 0 || fe.Loc[0] != where || fe.Msg == "" || fe.Type == "" {
				t.Fatalf("%s: a field error %+v: want loc under %q, a message and a type", op.Name, fe, where)
			}
		}
		if _, err := json.Marshal(fields); err != nil {
			t.Fatalf("%s: the 422 body cannot be written: %v", op.Name, err)
		}
		return
	}
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v, not an error of the catalog (a 500)", op.Name, err)
	}
	switch e.Kind {
	case apperr.Invalid, apperr.TooLarge, apperr.Unsupported:
	default:
		t.Fatalf("%s: %v of kind %s, not the caller's fault", op.Name, err, e.Kind)
	}
}

// FuzzPathMatchesAsTheTemplateDoes: for every operation's template, the
// segment matcher in front of a route (Route) accepts a path exactly when
// the route's own expression does, so it turns down no request the
// router would have served and lets through only the one it names.
func FuzzPathMatchesAsTheTemplateDoes(f *testing.F) {
	for _, op := range Operations {
		path := exampleURL(op.Path)
		for _, p := range []string{path, path + "/", path + "/x", path[:len(path)-1], strings.Replace(path, "id_1", "", 1), "//" + path[1:]} {
			f.Add(p)
		}
	}
	type pair struct {
		segments segments
		route    *mux.Route
	}
	var pairs []pair
	for _, op := range Operations {
		pairs = append(pairs, pair{segmentsOf(op.Path), mux.NewRouter().SkipClean(true).Path(op.Path)})
	}
	f.Fuzz(func(t *testing.T, path string) {
		req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}}
		for _, p := range pairs {
			want := p.route.Match(req, &mux.RouteMatch{})
			if got := p.segments.match(req, nil); got != want {
				tmpl, _ := p.route.GetPathTemplate()
				t.Fatalf("%q against %s: the segments say %v, the expression %v", path, tmpl, got, want)
			}
		}
	})
}
