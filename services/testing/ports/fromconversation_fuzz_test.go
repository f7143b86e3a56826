package ports_test

import (
	"encoding/json"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/conversationtest"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// ---- POST /v1/convai/agent-testing/from-conversation ----

// FuzzFromConversationBody feeds untrusted bodies to the parser: it never
// panics, a rejection is a client error at a loc under "body", and what it
// accepts with a transcript becomes a test that passes the rules of any
// created test, whose chat history ends just before an agent turn.
func FuzzFromConversationBody(f *testing.F) {
	for _, s := range []string{
		conversationtest.FromConversation(4, `,"ticket_id":"tkt_1","name":"n","success_condition":"c","parent_folder_id":"root"`),
		conversationtest.FromConversation(2, ""),
		conversationtest.FromConversation(1, ""),
		conversationtest.FromConversation(9, ""),
		`{"agent_id":"agent_1","conversation_id":"c","turn_index":0,"transcript":[{"role":"agent","time_in_call_secs":0,
		  "tool_calls":[{"request_id":"r","tool_name":"t","params_as_json":"{\"a\":1,\"b\":\"x\",\"c\":[1]}"}],
		  "tool_results":[{"request_id":"r","tool_name":"t","result_value":"v","is_error":true}]}]}`,
		`{"agent_id":"agent_1","conversation_id":"c","turn_index":0,"transcript":[{"role":"agent","time_in_call_secs":0,"tool_results":[{"result_value":"v"}]}]}`,
		`{"agent_id":"agent_1","conversation_id":"c","turn_index":0,"transcript":[{"role":"agent","time_in_call_secs":0,"tool_results":"x"}]}`,
		`{"agent_id":"agent_1","conversation_id":"c","turn_index":0,"transcript":[]}`,
		`{"agent_id":"agent_1","conversation_id":"c","turn_index":1e3,"transcript":[null]}`,
		`{"turn_index":"0"}`,
		`{}`,
		`[]`,
		`null`,
		`{"transcript":[`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if int64(len(body)) > api.CreateTestFromConversation.BodyLimit() {
			return // the handler answers 413 before parsing
		}
		_, err := apitest.Edge(api.CreateTestFromConversation, body)
		if err != nil {
			checkRejection(t, err)
			return
		}
		in, transcript, err := app.ParseFromConversation(body)
		if err != nil {
			checkRejection(t, err)
			return
		}
		if transcript == nil {
			// No transcript: the request names a recorded conversation,
			// completed and checked as a posted one once it is read
			// (app's TestCreateTestFromConversation; through the gateway,
			// the stack's TestConversationsAPI).
			if in.ConversationID == nil || in.TurnIndex == nil {
				t.Fatalf("accepted a request that names no recorded conversation and turn: %s", body)
			}
			return
		}
		at := *in.TurnIndex
		if in.AgentID == nil || in.ConversationID == nil || at < 0 || at >= len(in.Transcript) ||
			in.Transcript[at].Role != "agent" || len(transcript) != len(in.Transcript) {
			t.Fatalf("accepted a request the conversion cannot use: %s", body)
		}
		test, raw, err := parseTest(app.RegressionTestBody(in, transcript))
		if err != nil {
			t.Fatalf("accepted request makes an invalid test: %v\n%s", err, body)
		}
		if *test.Type != domain.TypeLLM || len(test.ChatHistory) != at {
			t.Fatalf("type %s, %d history messages for turn %d", *test.Type, len(test.ChatHistory), at)
		}
		var meta struct {
			Reply []json.RawMessage `json:"original_agent_reply"`
		}
		if err := json.Unmarshal(test.FromConversationMetadata, &meta); err != nil || len(meta.Reply) == 0 {
			t.Fatalf("from_conversation_metadata %s: %v", test.FromConversationMetadata, err)
		}
		// What is stored is what runners read back, still a valid test.
		stored, err := domain.ParseDefinition(domain.Definition(raw))
		if err != nil {
			t.Fatal(err)
		}
		stored.Name, stored.Type = test.Name, test.Type
		var v apperr.Validator
		stored.Validate(&v)
		if err := v.Err(); err != nil {
			t.Fatalf("stored definition is no longer valid: %v", err)
		}
	})
}
