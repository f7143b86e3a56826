package stack

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A WARN or ERROR line means someone must act. A clean run — a team's
// ordinary day through the gateway, its client errors included — logs
// neither, and the orchestrator's probes stay out of the info log. (A
// client that hangs up: natsx's TestForwardClientGoneIsNotAnError.)
func TestACleanRunLogsNoWarning(t *testing.T) {
	t.Parallel()
	s, logs := startLogging(t, slog.LevelInfo, localHooks)

	var delivered atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { delivered.Add(1) }))
	t.Cleanup(rcv.Close)
	want := func(r response, code int) response {
		t.Helper()
		if r.Code != code {
			t.Fatalf("got %d, want %d: %s", r.Code, code, r.Body)
		}
		return r
	}
	for range 3 {
		want(call(t, s, "GET", "/healthz", "", ""), 200)
		want(call(t, s, "GET", "/readyz", "", ""), 200)
	}
	want(call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"url":"`+rcv.URL+`/hook","events":["ticket_created","call_started"]}`), 201)

	agent := agentWith(t, s)
	want(call(t, s, "PATCH", "/v1/convai/agents/"+agent, adminKey, `{"name":"Bookings desk"}`, "Idempotency-Key", "rename-1"), 200)
	want(call(t, s, "PATCH", "/v1/convai/agents/"+agent, adminKey, `{"name":"Bookings desk"}`, "Idempotency-Key", "rename-1"), 200)
	for range 3 { // concurrent projections of one agent: a race the projector settles
		want(call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"spare"}`), 201)
	}
	want(call(t, s, "GET", "/v1/convai/agents?page_size=2", adminKey, ""), 200)

	ticket := want(call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"title":"Quoted the wrong hours","qa_comment":"Said 8 to 4."}`), 201).JSON(t)["agentqa_ticket_id"].(string)
	want(call(t, s, "POST", "/v1/convai/triage-tickets/"+ticket+"/comments", adminKey, `{"comment":"Seen twice today."}`), 200)
	want(call(t, s, "PATCH", "/v1/convai/triage-tickets/"+ticket, adminKey, `{"status":"in_progress"}`), 200)
	want(call(t, s, "POST", "/v1/convai/events", adminKey, `{"event":"call_started","data":{"call_id":"call_1"}}`), 202)

	test := createTest(t, s, hoursTest)
	inv := want(call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey, `{"tests":[{"test_id":"`+test+`"}]}`), 200).JSON(t)["id"].(string)
	awaitCompleted(t, s, inv, 60*time.Second)

	// What callers get wrong is theirs to fix, not an operator's.
	want(call(t, s, "GET", "/v1/convai/agents/agent_unknown", adminKey, ""), 404)
	want(call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":`), 400)
	want(call(t, s, "PATCH", "/v1/convai/triage-tickets/"+ticket, adminKey, `{"status":"merged"}`), 409)
	want(call(t, s, "GET", "/v1/convai/agents", "wrong-key", ""), 401)

	eventually(t, 30*time.Second, "the webhook deliveries", func() bool { return delivered.Load() >= 2 })
	if !strings.Contains(logs.String(), `msg="http request"`) {
		t.Fatalf("no access log line at info: the check reads nothing\n%s", logs.String())
	}
	var loud []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			loud = append(loud, line)
		}
		if strings.Contains(line, "level=INFO") && (strings.Contains(line, "/healthz") || strings.Contains(line, "/readyz")) {
			loud = append(loud, line)
		}
	}
	if len(loud) > 0 {
		t.Fatalf("a clean run logged %d lines for an operator (WARN, ERROR, probes at INFO):\n%s", len(loud), strings.Join(loud, ""))
	}
	// The refused key's line says where it came from, for an operator
	// who sees keys guessed (alert VoiceAIAPIKeysGuessed).
	refused := func(line string) bool {
		return strings.Contains(line, `msg="http request"`) && strings.Contains(line, "status=401") && strings.Contains(line, "client_ip=127.0.0.1")
	}
	if !slices.ContainsFunc(strings.Split(logs.String(), "\n"), refused) {
		t.Fatalf("no access log line of the refused key with its client's address:\n%s", logs.String())
	}
}
