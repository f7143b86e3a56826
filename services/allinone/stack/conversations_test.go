package stack

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// ingest posts a platform event through the gateway, as a team's call
// stack does.
func ingest(t *testing.T, s *Stack, key, event string, at time.Time, data map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"event": event, "timestamp": at.UTC().Format(time.RFC3339), "data": data})
	if r := call(t, s, "POST", "/v1/convai/events", key, string(body)); r.Code != 202 {
		t.Fatalf("ingest %s: %d %s", event, r.Code, r.Body)
	}
}

func listConversations(t *testing.T, s *Stack, key, query string) wire.ConversationPage {
	t.Helper()
	r := call(t, s, "GET", "/v1/convai/conversations?"+query, key, "")
	if r.Code != 200 {
		t.Fatalf("list conversations ?%s: %d %s", query, r.Code, r.Body)
	}
	var p wire.ConversationPage
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(p wire.ConversationPage) string {
	var out []string
	for _, c := range p.Conversations {
		out = append(out, c.ConversationID)
	}
	return strings.Join(out, ",")
}

// A call stack hands its conversations over with the events it already
// sends; they are listed newest first with the public filters, and read
// with their transcript and the tickets raised on them.
func TestConversationsAPI(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	support, sales := newAgent(t, s, adminKey, "Support"), newAgent(t, s, adminKey, "Sales")
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	transcript := []map[string]any{
		{"role": "user", "message": "My order never arrived.", "time_in_call_secs": 0},
		{"role": "agent", "message": "Let me check.", "time_in_call_secs": 2,
			"tool_calls": []map[string]any{{"tool_name": "lookup_order", "params_as_json": `{"id":"A1"}`, "request_id": "t1", "tool_has_been_called": true}}},
		{"role": "agent", "message": "It was delivered yesterday.", "time_in_call_secs": 5},
	}
	// conv_a: support, ended, failed, with a transcript; conv_b: sales,
	// ended, succeeded, no transcript; conv_c: support, still going.
	ingest(t, s, adminKey, "conversation_started", base, map[string]any{"conversation_id": "conv_a", "agent_id": support})
	ingest(t, s, adminKey, "conversation_ended", base.Add(95*time.Second), map[string]any{
		"conversation_id": "conv_a", "agent_id": support, "call_successful": "failure", "transcript": transcript})
	ingest(t, s, adminKey, "conversation_started", base.Add(10*time.Minute), map[string]any{"conversation_id": "conv_b", "agent_id": sales})
	ingest(t, s, adminKey, "conversation_ended", base.Add(11*time.Minute), map[string]any{
		"conversation_id": "conv_b", "agent_id": sales, "call_successful": "success", "call_duration_secs": 42, "turn_count": 6})
	ingest(t, s, adminKey, "conversation_started", base.Add(20*time.Minute), map[string]any{"conversation_id": "conv_c", "agent_id": support})

	var all wire.ConversationPage
	eventually(t, 10*time.Second, "three conversations listed", func() bool {
		all = listConversations(t, s, adminKey, "")
		return len(all.Conversations) == 3 && all.Conversations[2].Status == "done"
	})
	if got := ids(all); got != "conv_c,conv_b,conv_a" || all.HasMore || all.NextCursor != nil {
		t.Fatalf("listing %s (more %v), want newest first conv_c,conv_b,conv_a", got, all.HasMore)
	}
	want := map[string]wire.ConversationRow{
		"conv_a": {AgentID: support, ConversationID: "conv_a", StartTimeUnix: base.Unix(), CallDurationSecs: 95, MessageCount: 3, Status: "done", CallSuccessful: "failure", ToolNames: []string{"lookup_order"}},
		"conv_b": {AgentID: sales, ConversationID: "conv_b", StartTimeUnix: base.Add(10 * time.Minute).Unix(), CallDurationSecs: 42, MessageCount: 6, Status: "done", CallSuccessful: "success"},
		"conv_c": {AgentID: support, ConversationID: "conv_c", StartTimeUnix: base.Add(20 * time.Minute).Unix(), CallDurationSecs: 0, MessageCount: 0, Status: "in-progress", CallSuccessful: "unknown"},
	}
	for _, c := range all.Conversations {
		if !reflect.DeepEqual(c, want[c.ConversationID]) {
			t.Errorf("%s listed as %+v, want %+v", c.ConversationID, c, want[c.ConversationID])
		}
	}

	// The agents listing shows each agent's latest call, a call_started
	// counting as much as a conversation_started.
	phone := newAgent(t, s, adminKey, "Phone")
	ingest(t, s, adminKey, "call_started", base.Add(30*time.Minute), map[string]any{"call_id": "call_1", "agent_id": phone})
	wantLast := map[string]int64{support: base.Add(20 * time.Minute).Unix(), sales: base.Add(10 * time.Minute).Unix(), phone: base.Add(30 * time.Minute).Unix()}
	var lastCalls map[string]int64
	eventually(t, 10*time.Second, "the agents' last calls listed", func() bool {
		var page struct {
			Agents []struct {
				AgentID  string `json:"agent_id"`
				LastCall *int64 `json:"last_call_time_unix_secs"`
			} `json:"agents"`
		}
		if err := json.Unmarshal(call(t, s, "GET", "/v1/convai/agents", adminKey, "").Body, &page); err != nil {
			t.Fatal(err)
		}
		lastCalls = map[string]int64{}
		for _, a := range page.Agents {
			if a.LastCall != nil {
				lastCalls[a.AgentID] = *a.LastCall
			}
		}
		return maps.Equal(lastCalls, wantLast)
	})

	// Filters and paging.
	for query, wantIDs := range map[string]string{
		"agent_id=" + support:     "conv_c,conv_a",
		"call_successful=failure": "conv_a",
		"call_successful=unknown": "conv_c",
		fmt.Sprintf("call_start_before_unix=%d", base.Add(10*time.Minute).Unix()):                                       "conv_a",
		fmt.Sprintf("call_start_after_unix=%d", base.Unix()):                                                            "conv_c,conv_b",
		fmt.Sprintf("call_start_after_unix=%d&call_start_before_unix=%d", base.Unix(), base.Add(20*time.Minute).Unix()): "conv_b",
	} {
		if got := ids(listConversations(t, s, adminKey, query)); got != wantIDs {
			t.Errorf("?%s lists %q, want %q", query, got, wantIDs)
		}
	}
	first := listConversations(t, s, adminKey, "page_size=2")
	if ids(first) != "conv_c,conv_b" || !first.HasMore || first.NextCursor == nil {
		t.Fatalf("first page %s more=%v cursor=%v", ids(first), first.HasMore, first.NextCursor)
	}
	// A conversation arriving while paging is not on the next page.
	ingest(t, s, adminKey, "conversation_started", base.Add(30*time.Minute), map[string]any{"conversation_id": "conv_d", "agent_id": sales})
	second := listConversations(t, s, adminKey, "page_size=2&cursor="+url.QueryEscape(*first.NextCursor))
	if ids(second) != "conv_a" || second.HasMore {
		t.Fatalf("second page %s more=%v", ids(second), second.HasMore)
	}

	// Bad queries: a clear 422 at the parameter.
	for _, q := range []string{"call_successful=maybe", "page_size=0", "page_size=101", "call_start_before_unix=soon",
		"cursor=" + url.QueryEscape(*first.NextCursor) + "&agent_id=" + support, "cursor=garbage"} {
		if r := call(t, s, "GET", "/v1/convai/conversations?"+q, adminKey, ""); r.Code != 422 {
			t.Errorf("?%s: %d %s, want 422", q, r.Code, r.Body)
		}
	}

	// A ticket on conv_a, then the conversation with its transcript.
	tk := call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_a","qa_comment":"wrong answer"}`)
	if tk.Code != 201 {
		t.Fatalf("ticket: %d %s", tk.Code, tk.Body)
	}
	ticketID := tk.JSON(t)["agentqa_ticket_id"].(string)
	var conv struct {
		AgentID    string           `json:"agent_id"`
		Status     string           `json:"status"`
		Metadata   map[string]int64 `json:"metadata"`
		Analysis   map[string]any   `json:"analysis"`
		Transcript []map[string]any `json:"transcript"`
		Tickets    []map[string]any `json:"triage_tickets"`
	}
	eventually(t, 10*time.Second, "conv_a's transcript kept", func() bool {
		r := call(t, s, "GET", "/v1/convai/conversations/conv_a", adminKey, "")
		if r.Code != 200 {
			t.Fatalf("get conv_a: %d %s", r.Code, r.Body)
		}
		_ = json.Unmarshal(r.Body, &conv)
		return len(conv.Transcript) == 3
	})
	if conv.AgentID != support || conv.Status != "done" || conv.Metadata["start_time_unix_secs"] != base.Unix() ||
		conv.Metadata["call_duration_secs"] != 95 || conv.Analysis["call_successful"] != "failure" {
		t.Fatalf("conv_a: %+v", conv)
	}
	if conv.Transcript[1]["tool_calls"].([]any)[0].(map[string]any)["tool_name"] != "lookup_order" || conv.Transcript[2]["message"] != "It was delivered yesterday." {
		t.Fatalf("transcript not as handed over: %+v", conv.Transcript)
	}
	if len(conv.Tickets) != 1 || conv.Tickets[0]["agentqa_ticket_id"] != ticketID {
		t.Fatalf("tickets of conv_a: %+v", conv.Tickets)
	}
	if r := call(t, s, "GET", "/v1/convai/conversations/conv_c", adminKey, ""); r.Code != 200 || !strings.Contains(string(r.Body), `"transcript":[]`) {
		t.Fatalf("conv_c (no transcript yet): %d %s", r.Code, r.Body)
	}

	// Unknown and malformed ids are 404s; another workspace's conversation
	// of the same id is its own.
	for _, path := range []string{"/v1/convai/conversations/conv_zz", "/v1/convai/conversations/" + url.PathEscape("bad id!")} {
		wantError(t, call(t, s, "GET", path, adminKey, ""), 404, "conversation_not_found")
	}
	acme := createWorkspace(t, s, "Acme")
	wantError(t, call(t, s, "GET", "/v1/convai/conversations/conv_a", acme.APIKey, ""), 404, "conversation_not_found")
	acmeAgent := newAgent(t, s, acme.APIKey, "Acme support")
	ingest(t, s, acme.APIKey, "conversation_started", base, map[string]any{"conversation_id": "conv_a", "agent_id": acmeAgent})
	eventually(t, 10*time.Second, "acme's conv_a listed", func() bool { return ids(listConversations(t, s, acme.APIKey, "")) == "conv_a" })
	if got := listConversations(t, s, acme.APIKey, "").Conversations[0]; got.AgentID != acmeAgent || got.Status != "in-progress" {
		t.Fatalf("acme's conv_a: %+v", got)
	}
	if got := listConversations(t, s, adminKey, "call_successful=failure").Conversations; len(got) != 1 || !reflect.DeepEqual(got[0], want["conv_a"]) {
		t.Fatalf("the default workspace's conv_a changed: %+v", got)
	}
	reader, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
	if r := call(t, s, "GET", "/v1/convai/conversations/conv_a", reader, ""); r.Code != 200 {
		t.Fatalf("a read-only key reads a conversation: %d %s", r.Code, r.Body)
	}

	// A regression test from the recorded conversation, by its id alone:
	// its agent and transcript come from the record.
	r := call(t, s, "POST", "/v1/convai/agent-testing/from-conversation", adminKey, `{"conversation_id":"conv_a","turn_index":2}`)
	if r.Code != 201 {
		t.Fatalf("test from a recorded conversation: %d %s", r.Code, r.Body)
	}
	test := call(t, s, "GET", "/v1/convai/agent-testing/"+r.JSON(t)["id"].(string), adminKey, "")
	var got struct {
		ChatHistory []map[string]any `json:"chat_history"`
		Meta        struct {
			AgentID        string           `json:"agent_id"`
			ConversationID string           `json:"conversation_id"`
			Reply          []map[string]any `json:"original_agent_reply"`
		} `json:"from_conversation_metadata"`
	}
	if err := json.Unmarshal(test.Body, &got); err != nil || len(got.ChatHistory) != 2 || got.Meta.AgentID != support ||
		got.Meta.ConversationID != "conv_a" || len(got.Meta.Reply) != 1 || got.Meta.Reply[0]["message"] != "It was delivered yesterday." {
		t.Fatalf("the regression test: %s", test.Body)
	}
	for _, c := range []struct {
		key, body string
		code      int
		status    string
	}{
		{adminKey, `{"conversation_id":"conv_zz","turn_index":1}`, 404, "conversation_not_found"},
		{acme.APIKey, `{"conversation_id":"conv_b","turn_index":1}`, 404, "conversation_not_found"},
	} {
		wantError(t, call(t, s, "POST", "/v1/convai/agent-testing/from-conversation", c.key, c.body), c.code, c.status)
	}
	for body, loc := range map[string]string{
		`{"conversation_id":"conv_c","turn_index":1}`: "conversation_id", // no transcript handed over
		`{"conversation_id":"conv_a","turn_index":0}`: "turn_index",      // a user turn
		`{"conversation_id":"conv_a","turn_index":3}`: "turn_index",      // out of range
	} {
		r := call(t, s, "POST", "/v1/convai/agent-testing/from-conversation", adminKey, body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","`+loc+`"]`) {
			t.Errorf("%s: %d %s, want a 422 at %s", body, r.Code, r.Body, loc)
		}
	}
}
