package stack

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"
)

// The SDK's triage filters, feedback and tags through the gateway: several
// filters at once pick the right conversations, feedback and tags show on
// the conversation and filter it, and hostile input is refused.
// Both read models: the memory index and the store.
func TestConversationFiltersFeedbackAndTags(t *testing.T) {
	t.Parallel()
	onEachReadIndex(t, testConversationFilters)
}

func testConversationFilters(t *testing.T, s *Stack) {
	agent := newAgent(t, s, adminKey, "Refunds")
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	end := func(id string, at time.Time, outcome string, dur int, words string, tool map[string]any, analysis map[string]any) {
		turn := map[string]any{"role": "agent", "message": words, "time_in_call_secs": 1}
		if tool != nil {
			turn["tool_calls"] = []any{map[string]any{"tool_name": tool["name"], "request_id": "r1", "params_as_json": "{}", "tool_has_been_called": true}}
			turn["tool_results"] = []any{map[string]any{"tool_name": tool["name"], "request_id": "r1", "result_value": "x", "is_error": tool["error"], "tool_has_been_called": true}}
		}
		ingest(t, s, adminKey, "conversation_started", at, map[string]any{"conversation_id": id, "agent_id": agent})
		ingest(t, s, adminKey, "conversation_ended", at.Add(time.Duration(dur)*time.Second), map[string]any{
			"conversation_id": id, "agent_id": agent, "call_successful": outcome, "call_duration_secs": dur,
			"transcript": []any{map[string]any{"role": "user", "message": "hello", "time_in_call_secs": 0}, turn}, "analysis": analysis})
	}
	eval := func(result, city string, amount float64) map[string]any {
		return map[string]any{
			"evaluation_criteria_results": map[string]any{"accuracy": map[string]any{"criteria_id": "accuracy", "result": result, "rationale": "r"}},
			"data_collection_results": map[string]any{
				"city":   map[string]any{"data_collection_id": "city", "value": city},
				"amount": map[string]any{"data_collection_id": "amount", "value": amount}},
			"transcript_summary": "About a refund to " + city,
		}
	}
	end("cf_1", base, "failure", 120, "Your refund is denied", map[string]any{"name": "refund", "error": true}, eval("failure", "Denver", 80))
	end("cf_2", base.Add(time.Minute), "failure", 30, "Your refund is on its way", map[string]any{"name": "refund", "error": false}, eval("failure", "Paris", 20))
	end("cf_3", base.Add(2*time.Minute), "success", 200, "Your refund is denied again", map[string]any{"name": "lookup", "error": false}, eval("success", "Denver", 300))
	end("cf_4", base.Add(3*time.Minute), "failure", 500, "Bags are lost", nil, eval("failure", "Denver", 90))

	list := func(q url.Values) (string, int) {
		r := call(t, s, "GET", "/v1/convai/conversations?"+q.Encode(), adminKey, "")
		if r.Code != 200 {
			return string(r.Body), r.Code
		}
		var p struct {
			Conversations []struct {
				ConversationID    string  `json:"conversation_id"`
				TranscriptSummary *string `json:"transcript_summary"`
			} `json:"conversations"`
		}
		_ = json.Unmarshal(r.Body, &p)
		out := ""
		for _, c := range p.Conversations {
			out += c.ConversationID + ","
		}
		return out, 200
	}
	eventually(t, 10*time.Second, "four conversations listed", func() bool {
		got, _ := list(url.Values{"exclude_statuses": {"in-progress"}, "agent_id": {agent}})
		return got == "cf_4,cf_3,cf_2,cf_1,"
	})

	// Several filters at once: failed evaluation, refund tool, Denver, duration, search.
	q := url.Values{"agent_id": {agent}, "call_successful": {"failure"}, "evaluation_params": {"accuracy:failure"},
		"data_collection_params": {"city:eq:Denver", "amount:gte:50"}, "tool_names": {"refund"}, "tool_names_errored": {"refund"},
		"call_duration_min_secs": {"100"}, "call_duration_max_secs": {"150"}, "search": {"REFUND denied"}}
	if got, code := list(q); got != "cf_1," {
		t.Fatalf("combined filters: %s (%d), want cf_1", got, code)
	}
	if got, _ := list(url.Values{"search": {"refund denied"}, "agent_id": {agent}}); got != "cf_3,cf_1," {
		t.Fatalf("search: %s", got)
	}
	if got, _ := list(url.Values{"data_collection_params": {"city:in:Paris|Nowhere"}, "agent_id": {agent}}); got != "cf_2," {
		t.Fatalf("in: %s", got)
	}

	// Feedback and tags.
	if r := call(t, s, "POST", "/v1/convai/conversations/cf_2/feedback", adminKey, `{"feedback":"like"}`); r.Code != 200 {
		t.Fatalf("feedback: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/conversations/cf_3/feedback", adminKey, `{"feedback":"dislike"}`); r.Code != 200 {
		t.Fatalf("feedback: %d %s", r.Code, r.Body)
	}
	r := call(t, s, "POST", "/v1/convai/tags", adminKey, `{"title":"Wrong refund","description":"quoted the wrong rule"}`)
	if r.Code != 200 {
		t.Fatalf("create tag: %d %s", r.Code, r.Body)
	}
	tag, _ := r.JSON(t)["tag_id"].(string)
	if r := call(t, s, "PATCH", "/v1/convai/tags/"+tag, adminKey, `{"title":"Wrong refund rule"}`); r.Code != 200 || r.JSON(t)["title"] != "Wrong refund rule" {
		t.Fatalf("update tag: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/v1/convai/tags/"+tag, adminKey, ""); r.Code != 200 || r.JSON(t)["description"] != "quoted the wrong rule" {
		t.Fatalf("get tag: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/v1/convai/tags", adminKey, ""); r.Code != 200 || len(r.JSON(t)["conversation_tags"].([]any)) != 1 {
		t.Fatalf("list tags: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/v1/convai/conversations?summary_mode=include&agent_id="+agent+"&page_size=1", adminKey, ""); r.Code != 200 ||
		r.JSON(t)["conversations"].([]any)[0].(map[string]any)["transcript_summary"] != "About a refund to Denver" {
		t.Fatalf("summary_mode=include: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/conversations/cf_1/tags", adminKey, `{"tag_ids":["`+tag+`"]}`); r.Code != 204 {
		t.Fatalf("assign: %d %s", r.Code, r.Body)
	}
	if got, _ := list(url.Values{"rating_min": {"4"}, "agent_id": {agent}}); got != "cf_2," {
		t.Fatalf("rating_min 4: %s", got)
	}
	if got, _ := list(url.Values{"rating_max": {"2"}, "agent_id": {agent}}); got != "cf_3," {
		t.Fatalf("rating_max 2: %s", got)
	}
	if got, _ := list(url.Values{"tag_ids": {tag}}); got != "cf_1," {
		t.Fatalf("tag_ids: %s", got)
	}
	detail := call(t, s, "GET", "/v1/convai/conversations/cf_2", adminKey, "").JSON(t)
	if fb, _ := detail["metadata"].(map[string]any)["feedback"].(map[string]any); fb["overall_score"] != "like" || fb["rating"] != 5.0 {
		t.Fatalf("feedback shown as %v", detail["metadata"])
	}
	if tags := call(t, s, "GET", "/v1/convai/conversations/cf_1", adminKey, "").JSON(t)["tag_ids"]; fmt.Sprint(tags) != "["+tag+"]" {
		t.Fatalf("tags shown as %v", tags)
	}
	// A key is the workspace's for one operation: sent again for another
	// conversation, it is refused (another request's key) and changes
	// nothing there; sent again for the same one, it is a replay.
	for _, conv := range []string{"cf_2", "cf_2"} {
		if r := call(t, s, "POST", "/v1/convai/conversations/"+conv+"/feedback", adminKey, `{"feedback":"dislike"}`, "Idempotency-Key", "fb-once"); r.Code != 200 {
			t.Fatalf("keyed feedback on %s: %d %s", conv, r.Code, r.Body)
		}
	}
	wantInvalid(t, call(t, s, "POST", "/v1/convai/conversations/cf_4/feedback", adminKey, `{"feedback":"dislike"}`, "Idempotency-Key", "fb-once"),
		`["header","Idempotency-Key"]`, "idempotency_key_reused")
	if md := call(t, s, "GET", "/v1/convai/conversations/cf_4", adminKey, "").JSON(t)["metadata"].(map[string]any); md["feedback"] != nil {
		t.Fatalf("cf_4 got feedback from a replayed key: %v", md["feedback"])
	}
	if md := call(t, s, "GET", "/v1/convai/conversations/cf_2", adminKey, "").JSON(t)["metadata"].(map[string]any); fmt.Sprint(md["feedback"]) != "map[dislikes:1 likes:0 overall_score:dislike rating:1]" {
		t.Fatalf("cf_2's keyed feedback shown as %v", md["feedback"])
	}
	if r := call(t, s, "DELETE", "/v1/convai/conversations/cf_1/tags/"+tag, adminKey, ""); r.Code != 204 {
		t.Fatalf("unassign: %d %s", r.Code, r.Body)
	}
	if got, _ := list(url.Values{"tag_ids": {tag}}); got != "" {
		t.Fatalf("tag_ids after unassign: %s", got)
	}

	// Cursor paging under filters: one a page, every failed call once.
	seen := ""
	q = url.Values{"call_successful": {"failure"}, "page_size": {"1"}, "agent_id": {agent}}
	for range 5 {
		r := call(t, s, "GET", "/v1/convai/conversations?"+q.Encode(), adminKey, "")
		var p struct {
			Conversations []struct {
				ID string `json:"conversation_id"`
			} `json:"conversations"`
			NextCursor *string `json:"next_cursor"`
		}
		_ = json.Unmarshal(r.Body, &p)
		for _, c := range p.Conversations {
			seen += c.ID + ","
		}
		if p.NextCursor == nil {
			break
		}
		q.Set("cursor", *p.NextCursor)
	}
	if seen != "cf_4,cf_2,cf_1," {
		t.Fatalf("paged: %s", seen)
	}

	// Hostile input.
	for _, bad := range []url.Values{
		{"evaluation_params": {"accuracy"}}, {"evaluation_params": {"accuracy:maybe"}},
		{"data_collection_params": {"city:like:x"}}, {"data_collection_params": {"amount:gt:lots"}}, {"data_collection_params": {"nocolon"}},
		{"rating_min": {"9"}}, {"rating_min": {"5"}, "rating_max": {"1"}}, {"call_duration_min_secs": {"-1"}},
		{"exclude_statuses": {"sleeping"}}, {"summary_mode": {"all"}}, {"search": {"!!!"}}, {"tag_ids": {"a.b"}},
	} {
		if got, code := list(bad); code != 422 {
			t.Errorf("?%s: %d %s, want 422", bad.Encode(), code, got)
		}
	}
	if _, code := list(url.Values{"tag_ids": {"ctag_unknown"}}); code != 404 {
		t.Errorf("unknown tag: %d, want 404", code)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/convai/conversations/cf_1/feedback", `{"feedback":"meh"}`},
		{"POST", "/v1/convai/conversations/cf_1/tags", `{"tag_ids":["ctag_unknown"]}`},
		{"POST", "/v1/convai/conversations/conv_unknown/feedback", `{"feedback":"like"}`},
	} {
		if r := call(t, s, c.method, c.path, adminKey, c.body); r.Code != 422 && r.Code != 404 {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, r.Code, r.Body)
		}
	}

	// Another workspace sees none of it: not the tag, not the conversation.
	other := createWorkspace(t, s, "Other").APIKey
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/convai/tags/" + tag, ""},
		{"PATCH", "/v1/convai/tags/" + tag, `{"title":"x"}`},
		{"DELETE", "/v1/convai/tags/" + tag, ""},
		{"POST", "/v1/convai/conversations/cf_1/feedback", `{"feedback":"like"}`},
		{"GET", "/v1/convai/conversations?tag_ids=" + tag, ""},
	} {
		if r := call(t, s, c.method, c.path, other, c.body); r.Code != 404 {
			t.Errorf("other workspace %s %s: %d %s", c.method, c.path, r.Code, r.Body)
		}
	}
	if r := call(t, s, "GET", "/v1/convai/tags", other, ""); r.Code != 200 || len(r.JSON(t)["conversation_tags"].([]any)) != 0 {
		t.Errorf("other workspace lists tags: %s", r.Body)
	}
	if r := call(t, s, "DELETE", "/v1/convai/tags/"+tag, adminKey, ""); r.Code != 204 {
		t.Fatalf("delete tag: %d %s", r.Code, r.Body)
	}
	if _, code := list(url.Values{"tag_ids": {tag}}); code != 404 {
		t.Errorf("deleted tag filter: %d, want 404", code)
	}
}
