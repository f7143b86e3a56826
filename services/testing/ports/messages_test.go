package ports

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// referenceFullMessages is fullMessages as first written (a map per
// message, each key encoded as written): what it returns is the contract.
func referenceFullMessages(raw []byte) json.RawMessage {
	var in []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &in)
	var b bytes.Buffer
	b.WriteByte('[')
	for i, m := range in {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		n := 0
		put := func(k string, v []byte) {
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			key, _ := json.Marshal(k)
			b.Write(key)
			b.WriteByte(':')
			b.Write(v)
		}
		carried := func(k string) (json.RawMessage, bool) {
			v, ok := m[k]
			return v, ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
		}
		for _, k := range defaultMessageKeys {
			v, ok := carried(k)
			switch {
			case ok && messageMembers[k] != nil:
				v = messageMembers[k].complete(v)
			case ok:
			case k == "feedback":
				t, ok := carried("time_in_call_secs")
				if !ok {
					t = json.RawMessage("0")
				}
				v = json.RawMessage(`{"score":"like","time_in_call_secs":` + string(t) + `}`)
			default:
				v = defaultMessage[k]
			}
			put(k, v)
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, isDefault := defaultMessage[k]; !isDefault {
				if v, ok := carried(k); ok {
					put(k, v)
				}
			}
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes()
}

// An agent's reply as the runner records it.
const agentReply = `[{"role":"agent","message":"We are open nine to five every weekday.","time_in_call_secs":3,"tool_calls":[],` +
	`"agent_metadata":{"agent_id":"agent_01jbench","branch_id":"","workflow_node_id":"","version_id":""},"producing_llm":"offline-v2","source_medium":"text"}]`

var messageInputs = []string{
	agentReply,
	`[]`, ``, `null`, `{}`, `[{}]`, `[null]`, `not json`, `[{"role":"agent"`,
	`[{"role":"user","message":"When are you open?","time_in_call_secs":2},{"role":"agent","message":"Nine to five.","time_in_call_secs":4.5}]`,
	`[{"feedback":null,"time_in_call_secs":7}]`,
	`[{"feedback":{"score":"dislike","time_in_call_secs":1},"time_in_call_secs":null}]`,
	`[{"zeta":1,"alpha":"a","<b>&":true,"é":"ü","a\"b":null,"message":"  null  "}]`,
	`[{"role":"agent","role":"user"}]`,
	`[{"tool_calls":[{"request_id":"c1","tool_name":"lookup","params_as_json":"{}"}],"message":"x"} , {"message":"y"}]`,
	`[ { "message" : "spaced" , "time_in_call_secs" : 1 } ]`,
	`[{"message":"x"},"not an object"]`,
}

// fullMessages writes what the first version wrote, for every kind of
// message list (well-formed, partial, malformed).
func TestFullMessagesAsBefore(t *testing.T) {
	for _, in := range messageInputs {
		sameFullMessages(t, in)
	}
}

func FuzzFullMessagesAsBefore(f *testing.F) {
	for _, in := range messageInputs {
		f.Add(in)
	}
	f.Fuzz(sameFullMessages)
}

func sameFullMessages(t *testing.T, in string) {
	got, want := fullMessages([]byte(in)), referenceFullMessages([]byte(in))
	if !bytes.Equal(got, want) {
		t.Fatalf("fullMessages(%q)\n = %s\nwant %s", in, got, want)
	}
	if !json.Valid(got) {
		t.Fatalf("fullMessages(%q) = %s: not JSON", in, got)
	}
}

// A turn's objects are completed too, to any depth the spec lists: a
// partial tool call, tool result, reasoning or agent_metadata is shown
// with the members it lacks (or holds as null) at their defaults; what it
// carries, and members beyond the spec's, are kept; a value of another
// kind is left as it came.
func TestFullMessagesCompleteNestedObjects(t *testing.T) {
	in := `[{"role":"agent","agent_metadata":{"agent_id":"a","extra":1},` +
		`"tool_calls":[{"request_id":"r","tool_name":"t","params_as_json":"{}","tool_has_been_called":true,"tool_details":{"url":"https://x"}}],` +
		`"tool_results":[{"request_id":"r","tool_name":"t","result_value":"<v>","is_error":false,"tool_has_been_called":true,` +
		`"dynamic_variable_updates":[{"variable_name":"x","new_value":"1"}]}],` +
		`"reasoning":[{"summary":"because","provider_redact":null}],"multivoice_message":{"parts":[{"text":"hi"}]},` +
		`"rag_retrieval_info":{"chunks":[{"chunk_id":"c"}]},"triggered_guardrails":"not a list"}]`
	var out []map[string]json.RawMessage
	if err := json.Unmarshal(fullMessages([]byte(in)), &out); err != nil || len(out) != 1 {
		t.Fatalf("%v: %s", err, fullMessages([]byte(in)))
	}
	want := map[string]string{
		"agent_metadata": `{"agent_id":"a","branch_id":"","extra":1,"version_id":"","workflow_node_id":""}`,
		"tool_calls": `[{"params_as_json":"{}","request_id":"r","tool_details":{"body":"","headers":{},"method":"","path_params":{},` +
			`"query_params":{},"type":"webhook","url":"https://x"},"tool_has_been_called":true,"tool_name":"t","type":"system"}]`,
		"tool_results": `[{"dynamic_variable_updates":[{"new_value":"1","old_value":"","tool_name":"","tool_request_id":"",` +
			`"updated_at":0,"variable_name":"x"}],"error_type":"","is_blocked":false,"is_error":false,"raw_error_message":"",` +
			`"request_id":"r","result_value":"<v>","tool_has_been_called":true,"tool_latency_secs":0,"tool_name":"t","type":"client"}]`,
		"reasoning":            `[{"provider_redact":false,"summary":"because"}]`,
		"multivoice_message":   `{"parts":[{"text":"hi","time_in_call_secs":0,"voice_label":""}]}`,
		"rag_retrieval_info":   `{"chunks":[{"chunk_id":"c","document_id":"","vector_distance":0}],"embedding_model":"e5_mistral_7b_instruct","rag_latency_secs":0,"retrieval_query":"","used_chunk_ids":[]}`,
		"triggered_guardrails": `"not a list"`,
	}
	for k, w := range want {
		if got := string(out[0][k]); got != w {
			t.Errorf("%s\n = %s\nwant %s", k, got, w)
		}
	}
}

func BenchmarkFullMessages(b *testing.B) {
	for b.Loop() {
		fullMessages([]byte(agentReply))
	}
}
