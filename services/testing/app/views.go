package app

import (
	"encoding/json"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Every field of spec 2.4 is present in each message we return; these are
// the defaults of those a message does not carry.
func messageDefaults() map[string]any {
	return map[string]any{
		"role": "user", "time_in_call_secs": 0,
		"agent_metadata":     map[string]any{"agent_id": "", "branch_id": "", "workflow_node_id": "", "version_id": ""},
		"message":            "",
		"multivoice_message": map[string]any{"parts": []any{}},
		"tool_calls":         []any{}, "tool_results": []any{},
		"feedback":     map[string]any{"score": "like", "time_in_call_secs": 0},
		"llm_override": "", "producing_llm": "",
		"conversation_turn_metrics": map[string]any{"metrics": map[string]any{}, "convai_asr_provider": "", "convai_tts_model": "", "convai_tts_cascade": ""},
		"rag_retrieval_info": map[string]any{"chunks": []any{}, "embedding_model": "e5_mistral_7b_instruct", "retrieval_query": "",
			"rag_latency_secs": 0, "used_chunk_ids": []any{}},
		"llm_usage":   map[string]any{"model_usage": map[string]any{}},
		"interrupted": false, "ignored_as_backchannel": false, "original_message": "", "reasoning": []any{},
		"source_medium": "text", "source_event_id": 0, "used_static_kb_document_ids": []any{}, "user_identifier": "",
		"triggered_guardrails": []any{},
	}
}

// fullMessages completes each message of a JSON array with the defaults;
// a field the message carries (and is not null) wins.
func fullMessages(raw json.RawMessage) []map[string]any {
	var in []map[string]any
	_ = json.Unmarshal(raw, &in)
	out := make([]map[string]any, 0, len(in))
	for _, m := range in {
		full := messageDefaults()
		for k, v := range m {
			if v != nil {
				full[k] = v
			}
		}
		if feedback, ok := m["feedback"]; !ok || feedback == nil {
			full["feedback"] = map[string]any{"score": "like", "time_in_call_secs": full["time_in_call_secs"]}
		}
		out = append(out, full)
	}
	return out
}

// TestInfo is a test's definition as a run shows it (spec 2.3), every
// field present.
func TestInfo(t *testingv1.Test) map[string]any {
	def := map[string]json.RawMessage{}
	_ = json.Unmarshal(t.GetDefinitionJson(), &def)
	info := map[string]any{}
	for k, v := range def {
		info[k] = v
	}
	fcm := map[string]any{"conversation_id": "", "agent_id": "", "branch_id": "", "workflow_node_id": "", "original_agent_reply": []any{}}
	if raw, ok := def["from_conversation_metadata"]; ok {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		for k, v := range m {
			if v != nil {
				fcm[k] = v
			}
		}
		if r, ok := m["original_agent_reply"]; ok && r != nil {
			b, _ := json.Marshal(r)
			fcm["original_agent_reply"] = fullMessages(b)
		}
	}
	info["from_conversation_metadata"] = fcm
	info["chat_history"] = fullMessages(def["chat_history"])
	setDefault := func(k string, v any) {
		if raw, ok := def[k]; !ok || string(raw) == "null" {
			info[k] = v
		}
	}
	setDefault("dynamic_variables", map[string]any{})
	setDefault("conversation_initiation_source", "unknown")
	setDefault("environment", "production")
	setDefault("success_examples", []any{})
	setDefault("failure_examples", []any{})
	conds := []string{}
	var one string
	if json.Unmarshal(def["success_condition"], &one) == nil && one != "" {
		conds = append(conds, one)
	}
	var many []string
	if json.Unmarshal(def["success_conditions"], &many) == nil {
		conds = append(conds, many...)
	}
	info["success_conditions"] = conds
	info["type"] = t.GetType()
	return info
}

// metadataTestType is TestRunMetadata.test_type: "tool" tests are
// "tool_call" there.
func metadataTestType(t string) string {
	if t == domain.TypeTool {
		return "tool_call"
	}
	return t
}

// RunView is one run (spec 2.3, every field present). res is nil for a
// run without a result for its newest attempt; status is then pending, or
// cancelled when the invocation was.
func RunView(inv *testingv1.Invocation, pt *testingv1.PlannedTest, info map[string]any, runID string, res *testingv1.RunResult) map[string]any {
	status, result, msgs, summary := domain.RunPending, domain.ConditionUnknown, []string{}, ""
	responses := []map[string]any{}
	updated := inv.GetCreatedAtUnix()
	if inv.GetStatus() == domain.InvocationCancelled {
		status = domain.RunCancelled
		updated = inv.GetCancelledAtUnix()
	}
	env := "production"
	if e, ok := info["environment"].(json.RawMessage); ok {
		_ = json.Unmarshal(e, &env)
	}
	var usage any
	if res != nil {
		status, result, summary = res.GetStatus(), res.GetConditionResult(), res.GetRationaleSummary()
		if m := res.GetRationaleMessages(); m != nil {
			msgs = m
		}
		responses = fullMessages(res.GetAgentResponsesJson())
		updated = res.GetFinishedAtUnixMs() / 1000
		if u := res.GetUsage(); u != nil {
			usage = map[string]any{"provider": u.GetProvider(), "model": u.GetModel(), "prompt_tokens": u.GetPromptTokens(),
				"completion_tokens": u.GetCompletionTokens(), "total_tokens": u.GetTotalTokens(), "model_calls": u.GetModelCalls()}
		}
	}
	v := map[string]any{
		"test_run_id": runID, "test_invocation_id": inv.GetInvocationId(), "agent_id": inv.GetAgentId(),
		"status": status, "test_id": pt.GetTestId(), "test_info": info, "branch_id": inv.GetBranchId(),
		"workflow_node_id": pt.GetWorkflowNodeId(), "agent_responses": responses, "test_name": orDefault(pt.GetTestName(), "Unknown Test"),
		"condition_result":     map[string]any{"result": result, "rationale": map[string]any{"messages": msgs, "summary": summary}},
		"last_updated_at_unix": updated,
		"metadata": map[string]any{"workspace_id": inv.GetWorkspaceId(), "test_name": orDefault(pt.GetTestName(), "Unknown Test"),
			"ran_by_user_email": inv.GetRanByUserEmail(), "test_type": metadataTestType(pt.GetTestType())},
		"root_folder_id": pt.GetRootFolderId(), "root_folder_name": pt.GetRootFolderName(), "environment": env,
	}
	if res != nil {
		v["attempt"] = res.GetAttempt()
		v["model_usage"] = usage
		if res.GetError() != "" {
			v["error"] = res.GetError()
		}
	}
	return v
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// GroupView is a result group (spec 2.2).
func GroupView(g *testingv1.ResultGroup) map[string]any {
	buckets := make([]map[string]any, 0, len(g.GetBuckets()))
	for _, b := range g.GetBuckets() {
		ids := b.GetTestRunIds()
		if ids == nil {
			ids = []string{}
		}
		buckets = append(buckets, map[string]any{"test_run_ids": ids, "title": b.GetTitle(), "reason": b.GetReason(), "status": b.GetStatus()})
	}
	return map[string]any{"test_id": g.GetTestId(), "test_name": g.GetTestName(), "workflow_node_id": g.GetWorkflowNodeId(), "buckets": buckets}
}
