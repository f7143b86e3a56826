package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// members serves the identity operations on members, and records which
// ran; it stands in for a service's handlers.
type members struct{ ran string }

func (m *members) ListMembers(w http.ResponseWriter, r *http.Request) error {
	m.ran = "list"
	return nil
}

func (m *members) AddMember(w http.ResponseWriter, r *http.Request) error {
	m.ran = "add"
	return nil
}

// wrongShape has the name of a handler, not its shape.
type wrongShape struct{}

func (wrongShape) ListMembers(http.ResponseWriter, *http.Request) {}

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
		Operations = []Operation{ListMembers, AddMember, ListAgents}
		fn()
	}
	withMembersOnly(func() {
		m := &members{}
		r := Serve("identity", m)
		for method, want := range map[string]string{"GET": "list", "POST": "add"} {
			m.ran = ""
			req := httptest.NewRequest(method, "/v1/workspace/members", strings.NewReader(`{"email":"a@example.com"}`))
			req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"workspace_members_invite", "workspace_members_read"}}))
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
	mustPanic("a method without its operation", "nobody", &members{}, "AddMember serves no operation of nobody")
	mustPanic("a method of another shape", "identity", &wrongShape{}, "ListMembers is func(http.ResponseWriter, *http.Request), not a HandlerFunc")
}
