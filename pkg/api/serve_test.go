package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// members serves the identity operations on members, and records which
// ran; it stands in for a service's handlers.
type members struct{ ran string }

func (m *members) ListMembers(*Call) (any, error) {
	m.ran = "list"
	return nil, nil
}

func (m *members) UpdateMember(*Call) (any, error) {
	m.ran = "update"
	return nil, nil
}

// wrongShape has the name of a handler, not its shape.
type wrongShape struct{}

func (wrongShape) ListMembers(http.ResponseWriter, *http.Request) error { return nil }

func TestHandlerNames(t *testing.T) {
	for op, want := range map[string]string{"tickets.turn_comment": "TurnComment", "agents.list": "List", "testing.create_test_from_conversation": "CreateTestFromConversation"} {
		if got := (Operation{Name: op}).HandlerName(); got != want {
			t.Errorf("%s: %s, want %s", op, got, want)
		}
	}
}

// Serve binds each operation of a service to the method named after it,
// through Handle (its permission checked), and refuses at once a table
// and handlers that do not match.
func TestServeBindsOperationsByName(t *testing.T) {
	withMembersOnly := func(fn func()) {
		saved := Operations
		t.Cleanup(func() { Operations = saved })
		Operations = []Operation{ListMembers, UpdateMember, ListAgents}
		fn()
	}
	withMembersOnly(func() {
		m := &members{}
		r := Serve("identity", m)
		for method, want := range map[string]string{"GET": "list", "POST": "update"} {
			m.ran = ""
			req := httptest.NewRequest(method, "/v1/workspace/members", strings.NewReader(`{"email":"a@example.com"}`))
			req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"workspace_write", "workspace_members_read"}}))
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if m.ran != want {
				t.Errorf("%s ran %q (%d %s), want %q", method, m.ran, rec.Code, rec.Body, want)
			}
		}
		req := httptest.NewRequest("GET", "/v1/workspace/members", nil)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"convai_read"}})))
		if rec.Code != http.StatusForbidden {
			t.Errorf("without the permission: %d", rec.Code)
		}
		// Matched as sent: a path that only cleans to an operation's is
		// none of them, not a redirect to it.
		m.ran = ""
		req = httptest.NewRequest("POST", "/v1/workspace/x/../members", strings.NewReader(`{"email":"a@example.com"}`))
		rec = httptest.NewRecorder()
		r.ServeHTTP(rec, req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"workspace_write"}})))
		if rec.Code != http.StatusNotFound || m.ran != "" {
			t.Errorf("a path with dot segments: %d %q (ran %q), want 404", rec.Code, rec.Header().Get("Location"), m.ran)
		}
	})

	mustPanic := func(what, service string, h any, want string) {
		t.Helper()
		defer func() {
			if p, _ := recover().(string); !strings.Contains(p, want) {
				t.Errorf("%s: panic %q, want it to name %q", what, p, want)
			}
		}()
		withMembersOnly(func() { Serve(service, h) })
	}
	mustPanic("an operation without its method", "agents", &members{}, "no method List to serve GET /v1/convai/agents")
	mustPanic("a method without its operation", "nobody", &members{}, "ListMembers serves no operation of nobody")
	mustPanic("a method of another shape", "identity", &wrongShape{}, "ListMembers is func(http.ResponseWriter, *http.Request) error, not a HandlerFunc")
}

// A handler reads a body of up to its operation's limit: a larger one is
// refused 413 before anything is decoded, and one above the default but
// within the limit is checked against the schema, then read whole.
func TestHandlersReadUpToTheirOperationsBodyLimit(t *testing.T) {
	op := CreateSecret // a secret's body: 64 KiB
	if op.BodyLimit() >= httpx.DefaultMaxBody {
		t.Fatalf("%s's limit %d is not below the default", op.Name, op.BodyLimit())
	}
	large := RunTests // runs of 5,000 tests: above the default
	if large.BodyLimit() <= httpx.DefaultMaxBody {
		t.Fatalf("%s's limit %d is not above the default", large.Name, large.BodyLimit())
	}
	serve := func(op Operation, body string) (*httptest.ResponseRecorder, int) {
		r := mux.NewRouter()
		read := -1
		Handle(r, op, func(c *Call) (any, error) {
			var in map[string]any
			if err := c.Body(&in); err != nil {
				return nil, err
			}
			read = len(body)
			return in, nil
		})
		path := strings.ReplaceAll(op.Path, "{agent_id}", "agent_1")
		req := httptest.NewRequest(op.Method, path, strings.NewReader(body))
		req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"all"}}))
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec, read
	}
	pad := func(n int) string { return strings.Repeat(" ", n) }
	secret := `{"name":"key","value":"v"}`
	if rec, read := serve(op, secret+pad(int(op.BodyLimit())-len(secret))); rec.Code != http.StatusOK || read < 0 {
		t.Fatalf("a body at the limit: %d %s", rec.Code, rec.Body)
	}
	if rec, read := serve(op, secret+pad(int(op.BodyLimit())-len(secret)+1)); rec.Code != http.StatusRequestEntityTooLarge || read >= 0 {
		t.Fatalf("a body one byte over the limit: %d %s (read %d)", rec.Code, rec.Body, read)
	}
	tests := `{"tests":[{"test_id":"test_1"}]}`
	if rec, read := serve(large, tests+pad(2<<20)); rec.Code != http.StatusOK || read < 0 {
		t.Fatalf("a 2 MiB body within %s's limit: %d %s", large.Name, rec.Code, rec.Body)
	}
	if rec, _ := serve(large, `{"tests":"none"}`+pad(2<<20)); rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("a 2 MiB body against %s's schema: %d %s", large.Name, rec.Code, rec.Body)
	}
}
