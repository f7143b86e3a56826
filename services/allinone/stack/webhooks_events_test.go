package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// The event catalog lists exactly the events the document names, each
// described, with the data schema the document gives it; and a webhook
// subscribed to test_invocation_completed hears of a finished invocation
// with its counts, so CI need not poll.
func TestEventCatalogAndInvocationEvents(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	r := call(t, s, "GET", "/v1/voiceai/webhooks/events", adminKey, "")
	var catalog struct {
		Events []struct {
			Name        string         `json:"name"`
			Group       string         `json:"group"`
			Description string         `json:"description"`
			DataSchema  map[string]any `json:"data_schema"`
		} `json:"events"`
	}
	if r.Code != 200 || json.Unmarshal(r.Body, &catalog) != nil {
		t.Fatalf("catalog: %d %s", r.Code, r.Body)
	}
	var names []string
	for _, e := range catalog.Events {
		names = append(names, e.Name)
	}
	b, _ := api.OpenAPI()
	var doc struct {
		Components struct {
			Schemas struct {
				EventName struct {
					Enum []string `json:"enum"`
				} `json:"EventName"`
			} `json:"schemas"`
		} `json:"components"`
	}
	_ = json.Unmarshal(b, &doc)
	if !slices.Equal(names, doc.Components.Schemas.EventName.Enum) {
		t.Fatalf("catalog %v, document %v", names, doc.Components.Schemas.EventName.Enum)
	}
	i := slices.Index(names, "test_invocation_completed")
	if want, _ := api.Schema("InvocationEventData"); i < 0 || fmt.Sprint(catalog.Events[i].DataSchema) != fmt.Sprint(want) {
		t.Fatalf("test_invocation_completed's schema: %v", catalog.Events[i].DataSchema)
	}

	rcv := newFailableReceiver(t)
	rcv.secret = "whsec_invocation_events_0123456789"
	createWebhook(t, s, `{"url":"`+rcv.URL+`/ci","secret":"`+rcv.secret+`","events":["test_invocation_completed"]}`)
	agent := agentWith(t, s)
	test := createTest(t, s, hoursTest)
	inv := startRuns(t, s, adminKey, agent, 2, test)

	var got receivedDelivery
	eventually(t, 30*time.Second, "the completion is delivered", func() bool {
		for _, d := range rcv.all() {
			if d.event == "test_invocation_completed" {
				got = d
				return true
			}
		}
		return false
	})
	var env struct {
		Event string `json:"event"`
		Data  struct {
			InvocationID string `json:"invocation_id"`
			AgentID      string `json:"agent_id"`
			Status       string `json:"status"`
			TestRunCount int    `json:"test_run_count"`
			PassedCount  int    `json:"passed_count"`
			FailedCount  int    `json:"failed_count"`
			CompletedAt  *int64 `json:"completed_at_unix_secs"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got.body, &env); err != nil || !got.signed {
		t.Fatalf("delivery %s (signed %v): %v", got.body, got.signed, err)
	}
	d := env.Data
	if env.Event != "test_invocation_completed" || d.InvocationID != inv || d.AgentID != agent || d.Status != "completed" ||
		d.TestRunCount != 2 || d.PassedCount+d.FailedCount != 2 || d.CompletedAt == nil {
		t.Fatalf("delivered %s", got.body)
	}
	final := getInvocation(t, s, inv)
	passed := 0
	for _, run := range final.TestRuns {
		if run.Status == "passed" {
			passed++
		}
	}
	if passed != d.PassedCount {
		t.Fatalf("the event says %d passed, the invocation %d", d.PassedCount, passed)
	}
}
