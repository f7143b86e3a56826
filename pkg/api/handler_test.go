package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// serveOp serves one request for op through Handle with h, as a caller
// holding every permission who sends an Idempotency-Key.
func serveOp(t *testing.T, op Operation, h HandlerFunc, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := mux.NewRouter()
	Handle(r, op, h)
	req := httptest.NewRequest(op.Method, path, strings.NewReader(body))
	req.Header.Set(HeaderIdempotencyKey, "key-1")
	req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", UserID: "u1", Permissions: []string{"all"}}))
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec
}

// The binders hand a use case the request's caller (with its command
// id), the resource its path names (the last of several ids) and its
// body, and the edge answers what it gives with the operation's status.
func TestBindersPassTheCallerThePathsResourceAndTheBody(t *testing.T) {
	type seen struct {
		caller principal.Caller
		id     string
		body   map[string]any
	}
	var got seen
	update := func(_ context.Context, c principal.Caller, id string, in map[string]any) (string, error) {
		got = seen{c, id, in}
		return "updated " + id, nil
	}
	remove := func(_ context.Context, c principal.Caller, id string) error {
		got = seen{caller: c, id: id}
		return nil
	}
	rec := serveOp(t, UpdateKey, func(c *Call) (any, error) {
		return CommandOn(c, update, func(s string) string { return s })
	}, "/v1/service-accounts/sa_1/api-keys/key_2", `{"name":"n"}`)
	if rec.Code != http.StatusOK || rec.Body.String() != "\"updated key_2\"\n" || got.id != "key_2" || got.body["name"] != "n" ||
		got.caller.UserID != "u1" || got.caller.CommandID == "" || got.caller.CommandID != commandID("ws_a", UpdateKey.Name, "key-1") {
		t.Fatalf("CommandOn: %d %q, the use case saw %+v", rec.Code, rec.Body, got)
	}
	rec = serveOp(t, DeleteAgent, func(c *Call) (any, error) { return Remove(c, remove) }, "/v1/convai/agents/agent_9", "")
	if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 || got.id != "agent_9" || got.caller.WorkspaceID != "ws_a" {
		t.Fatalf("Remove: %d %q, the use case saw %+v", rec.Code, rec.Body, got)
	}
	ran := false
	rec = serveOp(t, CreateSecret, func(c *Call) (any, error) {
		return Command(c, func(context.Context, principal.Caller, struct {
			Name int `json:"name"`
		}) (int, error) {
			ran = true
			return 0, nil
		}, func(n int) int { return n })
	}, "/v1/convai/secrets", `{"name":"key","value":"v"}`)
	if rec.Code != http.StatusUnprocessableEntity || ran {
		t.Fatalf("a body of the wrong type must be refused before the use case runs: %d %s ran=%v", rec.Code, rec.Body, ran)
	}
}

// A Call names any of its path's ids; a name its path does not have is
// a programming error, answered 500, never a guess.
func TestCallReadsThePathsIDsByName(t *testing.T) {
	var user, key string
	rec := serveOp(t, UpdateKey, func(c *Call) (any, error) {
		user, key = c.PathID("user_id"), c.ID()
		return map[string]string{}, nil
	}, "/v1/service-accounts/sa_1/api-keys/key_2", `{}`)
	if rec.Code != http.StatusOK || user != "sa_1" || key != "key_2" {
		t.Fatalf("%d %s: user %q key %q", rec.Code, rec.Body, user, key)
	}
	defer func() {
		if p := fmt.Sprint(recover()); !strings.Contains(p, "has no {agent_id}") {
			t.Fatalf("panic %q, want it to name the missing variable", p)
		}
	}()
	serveOp(t, UpdateKey, func(c *Call) (any, error) { return c.PathID("agent_id"), nil }, "/v1/service-accounts/sa_1/api-keys/key_2", `{}`)
}

// The edge answers a handler's value with the operation's usual status,
// another of its success statuses when asked (Status), none of its
// others, and an error in the spec's shape, having written nothing else.
func TestTheEdgeAnswersWhatTheHandlerReturns(t *testing.T) {
	body := func(any) (any, error) { return map[string]int{"n": 1}, nil }
	cases := []struct {
		name string
		op   Operation
		path string
		h    HandlerFunc
		code int
		body string
	}{
		{"usual status", CreateAgent, agentsPath + "/create", func(c *Call) (any, error) { return body(c) }, http.StatusCreated, "{\"n\":1}\n"},
		{"another success status", CreateTicket, ticketsPath, func(*Call) (any, error) { return Status(http.StatusOK, map[string]int{"n": 2}), nil }, http.StatusOK, "{\"n\":2}\n"},
		{"a status not the operation's", CreateTicket, ticketsPath, func(*Call) (any, error) { return Status(http.StatusAccepted, 1), nil }, http.StatusInternalServerError, ""},
		{"a stream where 200 is not a success", CreateAgent, agentsPath + "/create", func(*Call) (any, error) {
			return Stream("text/plain", func(io.Writer) error { return nil }), nil
		}, http.StatusInternalServerError, ""},
		{"204", DeleteTag, tagsPath + "/tag_1", func(*Call) (any, error) { return nil, nil }, http.StatusNoContent, ""},
		{"an error", GetAgent, agentsPath + "/agent_1", func(*Call) (any, error) { return map[string]int{"n": 1}, apperr.AgentNotFound }, http.StatusNotFound, ""},
		{"an internal error", GetAgent, agentsPath + "/agent_1", func(*Call) (any, error) { return nil, errors.New("disk on fire") }, http.StatusInternalServerError, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := serveOp(t, c.op, c.h, c.path, `{"email":"a@example.com","conversation_id":"conv_1","qa_comment":"late reply"}`)
			if rec.Code != c.code || (c.body != "" && rec.Body.String() != c.body) || (c.code == http.StatusNoContent && rec.Body.Len() != 0) {
				t.Fatalf("%d %q, want %d %q", rec.Code, rec.Body, c.code, c.body)
			}
			if c.code >= 400 && !strings.Contains(rec.Body.String(), `"detail":{"status"`) {
				t.Fatalf("an error not in the spec's shape: %s", rec.Body)
			}
			if strings.Contains(rec.Body.String(), "disk on fire") {
				t.Fatalf("an internal error's text was shown: %s", rec.Body)
			}
		})
	}
}

// A stream answers 200 with its content type and body as written; one
// that fails after its status was sent cuts the connection
// (http.ErrAbortHandler) rather than append an error to the body.
func TestStreamAnswersAsItWritesAndAbortsWhenItFails(t *testing.T) {
	rec := serveOp(t, GetInvocation, func(*Call) (any, error) {
		return Stream("application/xml; charset=utf-8", func(w io.Writer) error {
			_, err := io.WriteString(w, "<testsuites/>")
			return err
		}), nil
	}, invocationsPath+"/tinv_1", "")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/xml; charset=utf-8" || rec.Body.String() != "<testsuites/>" {
		t.Fatalf("%d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("a failed stream: panic %v, want http.ErrAbortHandler", p)
		}
	}()
	serveOp(t, GetInvocation, func(*Call) (any, error) {
		return Stream("application/json", func(w io.Writer) error {
			_, _ = io.WriteString(w, `{"id":`)
			return errors.New("store gone")
		}), nil
	}, invocationsPath+"/tinv_1", "")
}

// A keyed write reaches its use case with the fingerprint of the request
// as sent (the events its command records carry it): the same for the
// same request, another for another body, query or resource, none
// without a key or for a read; and the handler still reads the body.
func TestKeyedWritesCarryTheRequestsFingerprint(t *testing.T) {
	digestOf := func(op Operation, path, body string, keyed bool) string {
		t.Helper()
		r := mux.NewRouter()
		var digest, read string
		Handle(r, op, func(c *Call) (any, error) {
			digest = esproto.RequestDigest(c.Context())
			b, err := c.RawBody()
			read = string(b)
			if op.Request == "" {
				err = nil
			}
			return nil, err
		})
		req := httptest.NewRequest(op.Method, path, strings.NewReader(body))
		if keyed {
			req.Header.Set(HeaderIdempotencyKey, "key-1")
		}
		req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"all"}}))
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		if rec.Code/100 != 2 || (op.Request != "" && read != body) {
			t.Fatalf("%s %s: %d %s; the handler read %q", op.Method, path, rec.Code, rec.Body, read)
		}
		return digest
	}
	first := digestOf(UpdateKey, "/v1/service-accounts/sa_1/api-keys/key_2", `{"name":"n"}`, true)
	if first == "" || digestOf(UpdateKey, "/v1/service-accounts/sa_1/api-keys/key_2", `{"name":"n"}`, true) != first {
		t.Fatalf("the same request's fingerprint %q must be stable", first)
	}
	for what, other := range map[string]string{
		"another body":     digestOf(UpdateKey, "/v1/service-accounts/sa_1/api-keys/key_2", `{"name":"m"}`, true),
		"another resource": digestOf(UpdateKey, "/v1/service-accounts/sa_1/api-keys/key_3", `{"name":"n"}`, true),
	} {
		if other == "" || other == first {
			t.Errorf("%s: fingerprint %q, want one of its own", what, other)
		}
	}
	if d := digestOf(DeleteFolder, "/v1/convai/agent-testing/folders/f_1", "", true); d == "" || d == digestOf(DeleteFolder, "/v1/convai/agent-testing/folders/f_1?force=true", "", true) {
		t.Errorf("the query is part of the request: %q either way", d)
	}
	if d := digestOf(UpdateKey, "/v1/service-accounts/sa_1/api-keys/key_2", `{"name":"n"}`, false); d != "" {
		t.Errorf("a write without a key has no fingerprint: %q", d)
	}
	if d := digestOf(GetAgent, "/v1/convai/agents/agent_1", "", true); d != "" {
		t.Errorf("a read has no fingerprint: %q", d)
	}
}
