package ports

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// members is what spec 2.4 lists inside one of a message's objects, or
// inside each item of one of its arrays: every member's default, and the
// members of those that hold objects of their own. A message shows each
// listed field, nested ones included (spec 2: "All fields listed for a
// resource are present in its responses"), so a turn given with a partial
// tool result is answered with the rest at their defaults.
type members struct {
	defaults map[string]json.RawMessage
	keys     []string            // of defaults, sorted; each written "key": in quoted
	quoted   [][]byte            // for the quick check that a flat object has them all
	nested   map[string]*members // a member holding an object, or an array of them
	items    bool                // the value is an array of these objects
}

func shape(defaults map[string]any, nested map[string]*members) *members {
	m := &members{defaults: map[string]json.RawMessage{}, nested: nested}
	for k, v := range defaults {
		m.defaults[k], _ = json.Marshal(v)
	}
	for k := range m.defaults {
		m.keys = append(m.keys, k)
	}
	slices.Sort(m.keys)
	for _, k := range m.keys {
		m.quoted = append(m.quoted, keyJSON(k))
	}
	return m
}

func arrayOf(m *members) *members { c := *m; c.items = true; return &c }

// messageMembers are the nested shapes of spec 2.4, by message field.
// Where the spec gives no default, the value it shows is the default, as
// for the message's own fields (a tool call's type "system", a tool
// detail's "webhook").
var messageMembers = map[string]*members{
	"agent_metadata": shape(map[string]any{"agent_id": "", "branch_id": "", "workflow_node_id": "", "version_id": ""}, nil),
	"multivoice_message": shape(map[string]any{"parts": []any{}}, map[string]*members{
		"parts": arrayOf(shape(map[string]any{"text": "", "voice_label": "", "time_in_call_secs": 0}, nil)),
	}),
	"tool_calls": arrayOf(shape(map[string]any{
		"request_id": "", "tool_name": "", "params_as_json": "", "tool_has_been_called": false, "type": "system",
		"tool_details": map[string]any{"type": "webhook", "method": "", "url": "", "headers": map[string]any{},
			"path_params": map[string]any{}, "query_params": map[string]any{}, "body": ""},
	}, map[string]*members{
		"tool_details": shape(map[string]any{"type": "webhook", "method": "", "url": "", "headers": map[string]any{},
			"path_params": map[string]any{}, "query_params": map[string]any{}, "body": ""}, nil),
	})),
	"tool_results": arrayOf(shape(map[string]any{
		"request_id": "", "tool_name": "", "result_value": "", "is_error": false, "tool_has_been_called": false,
		"is_blocked": false, "tool_latency_secs": 0, "error_type": "", "raw_error_message": "",
		"dynamic_variable_updates": []any{}, "type": "client",
	}, map[string]*members{
		"dynamic_variable_updates": arrayOf(shape(map[string]any{"variable_name": "", "old_value": "", "new_value": "",
			"updated_at": 0, "tool_name": "", "tool_request_id": ""}, nil)),
	})),
	"conversation_turn_metrics": shape(map[string]any{"metrics": map[string]any{}, "convai_asr_provider": "",
		"convai_tts_model": "", "convai_tts_cascade": ""}, nil),
	"rag_retrieval_info": shape(map[string]any{"chunks": []any{}, "embedding_model": "e5_mistral_7b_instruct",
		"retrieval_query": "", "rag_latency_secs": 0, "used_chunk_ids": []any{}}, map[string]*members{
		"chunks": arrayOf(shape(map[string]any{"document_id": "", "chunk_id": "", "vector_distance": 0}, nil)),
	}),
	"llm_usage":            shape(map[string]any{"model_usage": map[string]any{}}, nil),
	"reasoning":            arrayOf(shape(map[string]any{"summary": "", "provider_redact": false}, nil)),
	"triggered_guardrails": arrayOf(shape(map[string]any{"guardrail_type": "custom", "guardrail_name": ""}, nil)),
}

// complete returns v with the members it lacks (or holds as null) at
// their defaults, its own and its nested objects'. A value of another
// kind than m describes (a string where an object belongs) is returned
// as it came: the platform does not read it, and says nothing of it.
func (m *members) complete(v json.RawMessage) json.RawMessage {
	if m.items {
		t := bytes.TrimSpace(v)
		if len(t) < 3 || t[0] != '[' { // [] or not an array
			return v
		}
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return v
		}
		one := *m
		one.items = false
		changed := false
		for i, it := range items {
			if c := one.complete(it); !bytes.Equal(c, it) {
				items[i], changed = c, true
			}
		}
		if !changed {
			return v
		}
		return domain.TranscriptJSON(items)
	}
	if m.hasAll(v) {
		return v
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil || obj == nil {
		return v
	}
	changed := false
	for _, k := range m.keys {
		if got, ok := obj[k]; !ok || isNull(got) {
			obj[k], changed = m.defaults[k], true
		} else if n := m.nested[k]; n != nil {
			if c := n.complete(got); !bytes.Equal(c, got) {
				obj[k], changed = c, true
			}
		}
	}
	if !changed {
		return v
	}
	return domain.TranscriptJSON(obj) // keys sorted, as the message's own
}

// hasAll is the quick answer for a flat object (no nested members) that
// names every member: most agent_metadata a run records. A key written
// inside one of its strings is escaped (\"key\":), so cannot pass for one.
func (m *members) hasAll(v json.RawMessage) bool {
	if len(m.nested) > 0 || bytes.Contains(v, []byte("null")) {
		return false
	}
	for _, q := range m.quoted {
		if !bytes.Contains(v, q) {
			return false
		}
	}
	return true
}
