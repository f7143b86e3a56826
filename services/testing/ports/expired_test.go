package ports

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// An invocation older than the run retention answers 404
// invocation_expired through the router: as JSON, as JUnit XML, as a
// baseline and to a resubmit, in the spec's error shape.
func TestAnExpiredInvocationAnswers404(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	p := memory.NewPorts(clock)
	a := app.New(p.Ports(), memory.NewIndex(), slog.New(slog.DiscardHandler), clock)
	a.Limits.RunRetention = 30 * 24 * time.Hour
	c := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_1", UserID: "u_1", Permissions: []string{"all"}}}
	subject, _ := events.AgentSubject("ws_1", "agent_1")
	meta := esproto.Meta(ctx, "ws_1", "", now)
	if _, err := esproto.Append(ctx, p.Agents, subject, 0, meta, &agentsv1.AgentCreated{Meta: meta,
		Agent: &agentsv1.Agent{AgentId: "agent_1", WorkspaceId: "ws_1", Name: "Front desk"}}); err != nil {
		t.Fatal(err)
	}
	test, err := a.CreateTest(ctx, c, []byte(`{"type":"llm","name":"Hours","success_condition":"states the hours"}`))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := a.RunTests(ctx, c, "agent_1", app.RunTestsInput{Tests: []app.TestRef{{TestID: test.GetTestId()}}})
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocationId()
	h := httpx.WithPrincipal(api.Serve("testing", &Handlers{App: a}))
	send := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		c.Principal.SetHeaders(req.Header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	get, junit := "/v1/convai/test-invocations/"+id, "/v1/convai/test-invocations/"+id+"?format=junit"
	for _, path := range []string{get, junit} {
		if rec := send("GET", path, ""); rec.Code != http.StatusOK {
			t.Fatalf("GET %s within the retention: %d %s", path, rec.Code, rec.Body)
		}
	}
	now = now.Add(30*24*time.Hour + time.Second)
	resubmit := `{"agent_id":"agent_1","test_run_ids":["` + domain.RunID(id, 0) + `"]}`
	for _, r := range []struct{ method, path, body string }{
		{"GET", get, ""}, {"GET", junit, ""},
		{"GET", "/v1/convai/test-invocations/" + id + "?baseline_invocation_id=" + id, ""},
		{"POST", "/v1/convai/test-invocations/" + id + "/resubmit", resubmit},
	} {
		rec := send(r.method, r.path, r.body)
		var body struct {
			Detail struct{ Status, Message string } `json:"detail"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusNotFound || body.Detail.Status != "invocation_expired" || !strings.Contains(body.Detail.Message, "after 30 days") {
			t.Fatalf("%s %s past the retention: %d %s; want 404 invocation_expired", r.method, r.path, rec.Code, rec.Body)
		}
	}
}
