package ports_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/conversationtest"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Every bad input is a client error at its loc (the schema's at the
// edge, or the app's), before anything is read.
func TestFromConversationRejects(t *testing.T) {
	long := strings.Repeat("x", domain.MaxTextLen+1)
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"role":"user","time_in_call_secs":1},`, 502), ",") + `,{"role":"agent","time_in_call_secs":2}]`
	cases := []struct {
		body string
		loc  string // "" for a 400
	}{
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":[],"turn_index":0}`, `["body","transcript"]`},
		{conversationtest.FromConversation(6, ""), `["body","turn_index"]`},
		{conversationtest.FromConversation(-1, ""), `["body","turn_index"]`},
		{conversationtest.FromConversation(1, ""), `["body","turn_index"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":` + conversationtest.Production + `}`, `["body","turn_index"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":` + many + `,"turn_index":502}`, `["body","turn_index"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":` + conversationtest.Production + `,"turn_index":"4"}`, `["body","turn_index"]`},
		{`{"conversation_id":"c","transcript":` + conversationtest.Production + `,"turn_index":4}`, `["body","agent_id"]`},
		{`{"agent_id":"a b","conversation_id":"c","transcript":` + conversationtest.Production + `,"turn_index":4}`, `["body","agent_id"]`},
		{`{"agent_id":"agent_1","transcript":` + conversationtest.Production + `,"turn_index":4}`, `["body","conversation_id"]`},
		{conversationtest.FromConversation(4, `,"ticket_id":"../x"`), `["body","ticket_id"]`},
		{conversationtest.FromConversation(4, `,"name":""`), `["body","name"]`},
		{conversationtest.FromConversation(4, `,"name":"`+strings.Repeat("n", 201)+`"`), `["body","name"]`},
		{conversationtest.FromConversation(4, `,"success_condition":" "`), `["body","success_condition"]`},
		{conversationtest.FromConversation(4, `,"success_condition":"`+long+`"`), `["body","success_condition"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":[{"role":"bot","time_in_call_secs":1},{"role":"agent","time_in_call_secs":1}],"turn_index":1}`,
			`["body","transcript",0,"role"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":[{"role":"user"},{"role":"agent","time_in_call_secs":1}],"turn_index":1}`,
			`["body","transcript",0,"time_in_call_secs"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":[{"role":"agent","time_in_call_secs":1,"tool_calls":[{"request_id":"r"}]}],"turn_index":0}`,
			`["body","transcript",0,"tool_calls",0,"tool_name"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":[{"role":"agent","time_in_call_secs":1,"tool_results":{"a":1}}],"turn_index":0}`,
			`["body","transcript",0,"tool_results"]`},
		{`{"agent_id":"agent_1","conversation_id":"c","transcript":[null],"turn_index":0}`, `["body","transcript",0]`},
		{`[]`, `["body"]`},
		{`{"agent_id":"agent_1",`, ""},
		{`{"agent_id":"agent_1"} {}`, ""},
	}
	for _, c := range cases {
		_, err := apitest.Edge(api.CreateTestFromConversation, []byte(c.body))
		if err == nil {
			_, _, err = app.ParseFromConversation([]byte(c.body))
		}
		var ve apperr.ValidationErrors
		var he *apperr.Error
		switch {
		case c.loc == "":
			if !errors.As(err, &he) || httpx.StatusOf(he) != 400 {
				t.Errorf("%.120s: %v, want a 400", c.body, err)
			}
		case errors.As(err, &ve):
			found := false
			for _, fe := range ve {
				loc, _ := json.Marshal(fe.Loc)
				found = found || string(loc) == c.loc
			}
			if !found {
				t.Errorf("%.120s: %v, want an error at %s", c.body, ve, c.loc)
			}
		default:
			t.Errorf("%.120s: %v, want a 422 at %s", c.body, err, c.loc)
		}
	}
}
