package stack

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// Webhooks through the gateway: permissions, management, ingestion of a
// platform event, a signed delivery, the tickets domain event, the log
// and health.
func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	var mu sync.Mutex // guards secret, known once the webhook is created
	var secret string
	type got struct {
		event, id string
		valid     bool
		body      []byte
	}
	var deliveries collected[got]
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		ok := testkit.SignedBy([]byte(secret), body, r.Header.Get("X-Service-Signature"))
		mu.Unlock()
		deliveries.add(got{r.Header.Get("X-Service-Event"), r.Header.Get("X-Service-Event-Id"), ok, body})
	}))
	t.Cleanup(rcv.Close)

	reader, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
	writer, _, _ := newKey(t, s, adminKey, `["webhooks_write"]`, "")
	body := `{"url":"` + rcv.URL + `/hook","events":["call_started","ticket_created"],"retry_config":{"max_retries":1,"retry_delay":1}}`
	wantError(t, call(t, s, "POST", "/v1/convai/webhooks", reader, body), 403, "missing_permission")
	r := call(t, s, "POST", "/v1/convai/webhooks", writer, `{"url":"http://example.com","events":["call_started"]}`)
	if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","url"]`) {
		t.Fatalf("http url: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "POST", "/v1/convai/webhooks", writer, body)
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	created := r.JSON(t)
	id := created["webhook_id"].(string)
	mu.Lock()
	secret = created["secret"].(string)
	mu.Unlock()
	if r := call(t, s, "GET", "/v1/convai/webhooks", reader, ""); r.Code != 200 || !strings.Contains(string(r.Body), id) || strings.Contains(string(r.Body), secret) {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/v1/convai/webhooks/"+id, reader, ""); r.Code != 200 || r.JSON(t)["webhook_id"] != id || strings.Contains(string(r.Body), secret) {
		t.Fatalf("get: %d %s", r.Code, r.Body)
	}

	// Ingestion needs convai_write.
	wantError(t, call(t, s, "POST", "/v1/convai/events", writer, `{"event":"call_started","data":{}}`), 403, "missing_permission")
	eventID := sendCallEvent(t, s, "call_started", "c1")
	// A ticket created through the API reaches the webhook as ticket_created.
	agent := newAgent(t, s, adminKey, "Support")
	r = call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"qa_comment":"wrong answer"}`)
	if r.Code != 201 {
		t.Fatalf("ticket: %d %s", r.Code, r.Body)
	}
	var ticket map[string]any
	_ = json.Unmarshal(r.Body, &ticket)
	for _, d := range deliveries.await(t, 10*time.Second, "both deliveries", 2) {
		if !d.valid || (d.event == "call_started" && d.id != eventID) || (d.event != "call_started" && d.event != "ticket_created") {
			t.Fatalf("delivery %+v", d)
		}
		if d.event == "ticket_created" {
			// The event carries the ticket as the API answered the create:
			// the same shape (integers as numbers, nulls kept), the same state.
			var env struct {
				Data json.RawMessage `json:"data"`
			}
			var data struct {
				Ticket map[string]any `json:"ticket"`
			}
			if err := json.Unmarshal(d.body, &env); err != nil || json.Unmarshal(env.Data, &data) != nil {
				t.Fatalf("ticket_created body %s: %v", d.body, err)
			}
			if err := api.CheckJSON("TicketEventData", env.Data); err != nil {
				t.Fatalf("ticket_created data against the document: %v\n%s", err, env.Data)
			}
			if !reflect.DeepEqual(data.Ticket, ticket) {
				t.Fatalf("ticket_created carries %v\nthe create answered %v", data.Ticket, ticket)
			}
		}
	}
	eventually(t, 5*time.Second, "log entries", func() bool {
		r := call(t, s, "GET", "/v1/voiceai/webhooks/"+id+"/logs?limit=10", reader, "")
		return r.Code == 200 && strings.Count(string(r.Body), `"status":"success"`) == 2
	})
	r = call(t, s, "GET", "/v1/voiceai/webhooks/health", reader, "")
	if r.Code != 200 || !strings.Contains(string(r.Body), `"status":"healthy"`) {
		t.Fatalf("health: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "POST", "/v1/voiceai/webhooks/"+id+"/test", writer, `{"event_type":"conversation_ended"}`)
	if r.Code != 200 || r.JSON(t)["status"] != "success" {
		t.Fatalf("test: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "PUT", "/v1/convai/webhooks/"+id, writer, `{"active":false}`); r.Code != 200 || r.JSON(t)["active"] != false {
		t.Fatalf("update: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "DELETE", "/v1/convai/webhooks/"+id, writer, ""); r.Code != 204 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "GET", "/v1/voiceai/webhooks/"+id+"/logs", reader, ""), 404, "webhook_not_found")
}
