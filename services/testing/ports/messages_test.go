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
	`"agent_metadata":{"agent_id":"agent_01jbench","branch_id":"","workflow_node_id":""},"producing_llm":"offline-v2","source_medium":"text"}]`

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

func BenchmarkFullMessages(b *testing.B) {
	for b.Loop() {
		fullMessages([]byte(agentReply))
	}
}
