package ports

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// An invocation older than the run retention answers 404
// invocation_expired through the router: as JSON, as JUnit XML, as a
// baseline and to a resubmit, in the spec's error shape.
func TestAnExpiredInvocationAnswers404(t *testing.T) {
	ctx := context.Background()
	s := newMemoryService(t)
	s.app.Limits.RunRetention = 30 * 24 * time.Hour
	test, err := s.app.CreateTest(ctx, s.caller, []byte(`{"type":"llm","name":"Hours","success_condition":"states the hours"}`))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := s.app.RunTests(ctx, s.caller, "agent_1", app.RunTestsInput{Tests: []app.TestRef{{TestID: test.GetTestId()}}})
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocationId()
	get, junit := "/v1/convai/test-invocations/"+id, "/v1/convai/test-invocations/"+id+"?format=junit"
	for _, path := range []string{get, junit} {
		if rec := s.send("GET", path, ""); rec.Code != http.StatusOK {
			t.Fatalf("GET %s within the retention: %d %s", path, rec.Code, rec.Body)
		}
	}
	s.now = s.now.Add(30*24*time.Hour + time.Second)
	resubmit := `{"agent_id":"agent_1","test_run_ids":["` + domain.RunID(id, 0) + `"]}`
	for _, r := range []struct{ method, path, body string }{
		{"GET", get, ""}, {"GET", junit, ""},
		{"GET", "/v1/convai/test-invocations/" + id + "?baseline_invocation_id=" + id, ""},
		{"POST", "/v1/convai/test-invocations/" + id + "/resubmit", resubmit},
	} {
		rec := s.send(r.method, r.path, r.body)
		var body struct {
			Detail struct{ Status, Message string } `json:"detail"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusNotFound || body.Detail.Status != "invocation_expired" || !strings.Contains(body.Detail.Message, "after 30 days") {
			t.Fatalf("%s %s past the retention: %d %s; want 404 invocation_expired", r.method, r.path, rec.Code, rec.Body)
		}
	}
}
