package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/conversationtest"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// regression converts body as the service does and returns the created
// test's body, after checking it passes the rules of any created test.
func regression(t *testing.T, body string) map[string]any {
	t.Helper()
	in, transcript, err := app.ParseFromConversation([]byte(body))
	if err != nil {
		t.Fatalf("rejected: %v", err)
	}
	test := app.RegressionTestBody(in, transcript)
	if _, _, err := app.ParseTest(test); err != nil {
		t.Fatalf("the regression test is not a valid test: %v\n%s", err, test)
	}
	var out map[string]any
	if err := json.Unmarshal(test, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func messagesOf(t *testing.T, from string, indexes ...int) []any {
	t.Helper()
	var all []any
	if err := json.Unmarshal([]byte(from), &all); err != nil {
		t.Fatal(err)
	}
	out := []any{}
	for _, i := range indexes {
		out = append(out, all[i])
	}
	return out
}

func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	var gn any
	_ = json.Unmarshal(g, &gn)
	if !reflect.DeepEqual(gn, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, want)
	}
}

func TestRegressionFromTheFailingReply(t *testing.T) {
	test := regression(t, conversationtest.FromConversation(4, `,"ticket_id":"tkt_42"`))
	if test["type"] != "llm" || test["name"] != `Regression: "Where is my order 4521?" (conv_9, turn 4)` {
		t.Fatalf("type %v name %v", test["type"], test["name"])
	}
	// The chat history is every message before the turn, as posted.
	if got, want := test["chat_history"], messagesOf(t, conversationtest.Production, 0, 1, 2, 3); !reflect.DeepEqual(got, want) {
		t.Fatalf("chat_history %v\nwant %v", got, want)
	}
	meta := test["from_conversation_metadata"].(map[string]any)
	if want := messagesOf(t, conversationtest.Production, 4); !reflect.DeepEqual(meta["original_agent_reply"], want) {
		t.Fatalf("original_agent_reply %v", meta["original_agent_reply"])
	}
	delete(meta, "original_agent_reply")
	jsonEqual(t, "from_conversation_metadata", meta,
		`{"conversation_id":"conv_9","agent_id":"agent_1","branch_id":"main","workflow_node_id":"node_orders","ticket_id":"tkt_42"}`)
	// The result production saw answers the tool, whatever it is asked.
	jsonEqual(t, "tool_mock_config", test["tool_mock_config"], `{"mocking_strategy":"all","fallback_strategy":"raise_error"}`)
	jsonEqual(t, "tool_mock_overrides", test["tool_mock_overrides"],
		`{"get_order_status":[{"parameter_conditions":[],"mock_result":"Order 4521 shipped Monday, arrives Thursday.","is_error":false}]}`)
	cond := test["success_condition"].(string)
	for _, want := range []string{"consistent with", "every tool result", "ticket tkt_42", `"Your order arrives tomorrow."`} {
		if !strings.Contains(cond, want) {
			t.Fatalf("default success_condition lacks %q: %s", want, cond)
		}
	}
}

// Pointed at the agent message that called the tool, the failing turn is
// every agent message up to the user's next one: the call, its result and
// what the agent said; the mock comes from that result.
func TestRegressionFromTheToolCall(t *testing.T) {
	test := regression(t, conversationtest.FromConversation(2, `,"name":"Order day","success_condition":"The agent says the order arrives Thursday","parent_folder_id":"tfld_1"`))
	if got, want := test["chat_history"], messagesOf(t, conversationtest.Production, 0, 1); !reflect.DeepEqual(got, want) {
		t.Fatalf("chat_history %v", got)
	}
	meta := test["from_conversation_metadata"].(map[string]any)
	if want := messagesOf(t, conversationtest.Production, 2, 3, 4); !reflect.DeepEqual(meta["original_agent_reply"], want) {
		t.Fatalf("original_agent_reply %v", meta["original_agent_reply"])
	}
	if _, ok := meta["ticket_id"]; ok {
		t.Fatal("ticket_id without a ticket")
	}
	if test["name"] != "Order day" || test["success_condition"] != "The agent says the order arrives Thursday" || test["parent_folder_id"] != "tfld_1" {
		t.Fatalf("given fields not kept: %v %v %v", test["name"], test["success_condition"], test["parent_folder_id"])
	}
	if test["tool_mock_overrides"] == nil {
		t.Fatal("no mocks from the failing turn's tool result")
	}
}

// A transcript without tool results makes a test without mocks; a reply
// that only called a tool is quoted by its call.
func TestRegressionWithoutToolResults(t *testing.T) {
	test := regression(t, `{"agent_id":"agent_1","conversation_id":"conv_9","turn_index":1,"transcript":[
	  {"role":"user","message":"Book for 4","time_in_call_secs":1},
	  {"role":"agent","time_in_call_secs":2,"tool_calls":[{"request_id":"r1","tool_name":"book_table","params_as_json":"{\"guests\":40}"}]}]}`)
	if _, ok := test["tool_mock_config"]; ok {
		t.Fatalf("mocks without tool results: %v", test["tool_mock_overrides"])
	}
	if c := test["success_condition"].(string); !strings.Contains(c, `"called book_table with {\"guests\":40}"`) {
		t.Fatalf("condition %s", c)
	}
	if _, ok := test["from_conversation_metadata"].(map[string]any)["workflow_node_id"]; ok {
		t.Fatal("workflow_node_id without one in the transcript")
	}
}

// A tool called with different arguments gets a mock per argument set
// (matched exactly on its scalar arguments, newest result of each), then
// one for any other call with the newest result.
func TestProductionMocks(t *testing.T) {
	test := regression(t, `{"agent_id":"agent_1","conversation_id":"conv_9","turn_index":4,"transcript":[
	  {"role":"agent","time_in_call_secs":1,"tool_calls":[
	    {"request_id":"a","tool_name":"status","params_as_json":"{\"order_id\":\"1\",\"verbose\":true,\"n\":2,\"opts\":{\"x\":1},\"a.b\":\"c\"}"},
	    {"request_id":"b","tool_name":"status","params_as_json":"{\"order_id\":\"2\"}"}]},
	  {"role":"agent","time_in_call_secs":2,"tool_results":[
	    {"request_id":"a","tool_name":"status","result_value":"one, old","is_error":false},
	    {"request_id":"b","tool_name":"status","result_value":"no such order","is_error":true}]},
	  {"role":"agent","time_in_call_secs":3,"tool_calls":[{"request_id":"c","tool_name":"status","params_as_json":"{\"order_id\":\"1\",\"verbose\":true,\"n\":2}"}]},
	  {"role":"agent","time_in_call_secs":4,"tool_results":[{"request_id":"c","tool_name":"status","result_value":"one, new","is_error":false},
	    {"tool_name":"weather","result_value":"sunny","is_error":false},
	    {"request_id":"zz","tool_name":"weather","result_value":"rain","is_error":false},
	    {"request_id":"d","tool_name":"nothing","is_error":true}]},
	  {"role":"agent","message":"Order 1 is lost.","time_in_call_secs":5},
	  {"role":"user","message":"Really?","time_in_call_secs":6},
	  {"role":"agent","time_in_call_secs":7,"tool_results":[{"tool_name":"later","result_value":"after the turn"}]}]}`)
	exact := func(path, val string) string {
		return fmt.Sprintf(`{"path":%q,"eval":{"type":"exact","expected_value":%q}}`, path, val)
	}
	jsonEqual(t, "tool_mock_overrides", test["tool_mock_overrides"], `{
	  "status":[
	    {"parameter_conditions":[`+exact("n", "2")+`,`+exact("order_id", "1")+`,`+exact("verbose", "true")+`],"mock_result":"one, new","is_error":false},
	    {"parameter_conditions":[`+exact("order_id", "2")+`],"mock_result":"no such order","is_error":true},
	    {"parameter_conditions":[],"mock_result":"one, new","is_error":false}],
	  "weather":[{"parameter_conditions":[],"mock_result":"rain","is_error":false}]}`)
}

// conversations is the recorded conversations of workspace "ws".
type conversations map[string][]json.RawMessage

func (c conversations) Conversation(_ context.Context, caller principal.Caller, id string) (string, []json.RawMessage, error) {
	t, ok := c[id]
	if !ok || caller.WorkspaceID != "ws" {
		return "", nil, apperr.ConversationUnknown
	}
	return "agent_1", t, nil
}

// A regression test is made from a posted transcript, or from the one the
// platform recorded under the conversation id; the agent must exist.
func TestCreateTestFromConversation(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	var recorded []json.RawMessage
	if err := json.Unmarshal([]byte(conversationtest.Production), &recorded); err != nil {
		t.Fatal(err)
	}
	w.a.Conversations = conversations{"conv_9": recorded, "conv_empty": nil}

	posted, err := w.a.CreateTestFromConversation(ctx, w.c, []byte(conversationtest.FromConversation(4, "")))
	if err != nil || posted.GetType() != domain.TypeLLM {
		t.Fatalf("from a posted transcript: %v, %v", posted, err)
	}
	stored, err := w.a.CreateTestFromConversation(ctx, w.c, []byte(`{"conversation_id":"conv_9","turn_index":4}`))
	if err != nil {
		t.Fatalf("from the recorded conversation: %v", err)
	}
	if got, _, err := w.a.Tests.Get(ctx, "ws", stored.GetTestId()); err != nil || got.GetName() != posted.GetName() {
		t.Fatalf("the recorded conversation made %q, the posted one %q (%v)", got.GetName(), posted.GetName(), err)
	}

	for what, c := range map[string]struct {
		body string
		want error
	}{
		"an unknown agent":        {strings.Replace(conversationtest.FromConversation(4, ""), "agent_1", "agent_404", 1), apperr.AgentNotFound},
		"an unknown conversation": {`{"conversation_id":"conv_404","turn_index":4}`, apperr.ConversationUnknown},
	} {
		if _, err := w.a.CreateTestFromConversation(ctx, w.c, []byte(c.body)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", what, err, c.want)
		}
	}
	_, err = w.a.CreateTestFromConversation(ctx, w.c, []byte(`{"conversation_id":"conv_empty","turn_index":0}`))
	if f := fieldErrorAt(t, err, "body", "conversation_id"); !strings.Contains(f.Msg, "no transcript") {
		t.Fatalf("a recorded conversation without a transcript: %+v", f)
	}
	_, err = w.a.CreateTestFromConversation(ctx, w.c, []byte(`{"conversation_id":"conv_9","turn_index":4,"agent_id":"agent_2"}`))
	if f := fieldErrorAt(t, err, "body", "agent_id"); !strings.Contains(f.Msg, "agent_1") {
		t.Fatalf("a recorded conversation named with another agent: %+v", f)
	}
	if _, err := w.a.CreateTestFromConversation(ctx, w.c, []byte(`{"conversation_id":"conv_9","turn_index":4,"agent_id":"agent_1","name":"Named"}`)); err != nil {
		t.Fatalf("a recorded conversation named with its own agent: %v", err)
	}
}
