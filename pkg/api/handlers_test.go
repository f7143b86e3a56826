package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// The binders hand a use case the request's caller (with its command
// id), the resource its path names (the last of several ids) and its
// body, and answer what it gives.
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
	serve := func(op Operation, h HandlerFunc, path, body string) *httptest.ResponseRecorder {
		r := mux.NewRouter()
		Handle(r, op, h)
		req := httptest.NewRequest(op.Method, path, strings.NewReader(body))
		req.Header.Set(HeaderIdempotencyKey, "key-1")
		req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", UserID: "u1", Permissions: []string{"all"}}))
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec
	}
	rec := serve(UpdateKey, func(w http.ResponseWriter, r *http.Request) error {
		return CommandOn(w, r, http.StatusOK, update, func(s string) string { return s })
	}, "/v1/service-accounts/sa_1/api-keys/key_2", `{"name":"n"}`)
	if rec.Code != http.StatusOK || rec.Body.String() != "\"updated key_2\"\n" || got.id != "key_2" || got.body["name"] != "n" ||
		got.caller.UserID != "u1" || got.caller.CommandID == "" || got.caller.CommandID != commandID("ws_a", UpdateKey.Name, "key-1") {
		t.Fatalf("CommandOn: %d %q, the use case saw %+v", rec.Code, rec.Body, got)
	}
	rec = serve(DeleteAgent, func(w http.ResponseWriter, r *http.Request) error { return Remove(w, r, remove) }, "/v1/convai/agents/agent_9", "")
	if rec.Code != http.StatusNoContent || got.id != "agent_9" || got.caller.WorkspaceID != "ws_a" {
		t.Fatalf("Remove: %d %q, the use case saw %+v", rec.Code, rec.Body, got)
	}
}
