package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/ids"
)

func TestCheckBodyAnswersEveryWrongFieldInTheErrorShape(t *testing.T) {
	for _, c := range []struct {
		name string
		op   Operation
		body string
		want string // the entries, as JSON; "" for none
	}{
		{"valid", CreateTicket, `{"conversation_id":"conv_1","qa_comment":"wrong hours","priority":"high","labels":["a"]}`, ``},
		{"required", CreateTicket, `{"qa_comment":"x"}`,
			`[{"loc":["body","conversation_id"],"msg":"Field required","type":"missing"}]`},
		{"types, enum, id and bounds at once", CreateTicket,
			`{"conversation_id":"conv 1","title":7,"priority":"soon","labels":["` + strings.Repeat("l", 65) + `"],"turn_comments":[{"turn_index":-1,"comment":"x"}]}`,
			`[{"loc":["body","conversation_id"],"msg":"` + apperr.IDMessage + `","type":"string_pattern_mismatch"},` +
				`{"loc":["body","labels",0],"msg":"String should have at most 64 characters","type":"string_too_long"},` +
				`{"loc":["body","priority"],"msg":"Input should be 'low', 'medium', 'high' or 'urgent'","type":"enum"},` +
				`{"loc":["body","title"],"msg":"Input should be a valid string","type":"string_type"},` +
				`{"loc":["body","turn_comments",0,"turn_index"],"msg":"Input should be greater than or equal to 0","type":"greater_than_equal"}]`},
		{"a nullable enum given another value is an enum failure", UpdateTicket, `{"priority":"soon"}`,
			`[{"loc":["body","priority"],"msg":"Input should be 'low', 'medium', 'high' or 'urgent'","type":"enum"}]`},
		{"a required member is not absent for being null", CommentTicket, `{"comment":null}`,
			`[{"loc":["body","comment"],"msg":"Input should be a valid string","type":"string_type"}]`},
		{"null where null is allowed", UpdateTicket, `{"priority":null,"assignee_user_id":"@me"}`, ``},
		{"a blank comment", CommentTicket, `{"comment":"   "}`,
			`[{"loc":["body","comment"],"msg":"String should have a character other than white space","type":"string_too_short"}]`},
		{"a comment of no-break and ideographic spaces is blank too", CommentTicket, `{"comment":"\u00a0\u3000\u2029\u0085"}`,
			`[{"loc":["body","comment"],"msg":"String should have a character other than white space","type":"string_too_short"}]`},
		{"a blank success condition", CreateTest, `{"name":"t","type":"llm","success_condition":" \u00a0"}`,
			`[{"loc":["body","success_condition"],"msg":"String should have a character other than white space","type":"string_too_short"}]`},
		{"an empty success condition is none", CreateTest, `{"name":"t","type":"llm","success_condition":""}`, ``},
		{"not an object", CommentTicket, `[1]`,
			`[{"loc":["body"],"msg":"Input should be a valid dictionary or object","type":"model_type"}]`},
		{"a label given twice", CreateTicket, `{"conversation_id":"conv_1","qa_comment":"x","labels":["a","b","a"]}`,
			`[{"loc":["body","labels"],"msg":"List items should be unique","type":"value_error"}]`},
		{"an agent tag given twice", CreateAgent, `{"name":"a","tags":["support","support"]}`,
			`[{"loc":["body","tags"],"msg":"List items should be unique","type":"value_error"}]`},
		{"a turn before the call began", CreateTest,
			`{"name":"t","type":"llm","chat_history":[{"role":"user","message":"hi","time_in_call_secs":-1,"feedback":{"score":"like","time_in_call_secs":-0.5}}]}`,
			`[{"loc":["body","chat_history",0,"feedback","time_in_call_secs"],"msg":"Input should be greater than or equal to 0","type":"greater_than_equal"},` +
				`{"loc":["body","chat_history",0,"time_in_call_secs"],"msg":"Input should be greater than or equal to 0","type":"greater_than_equal"}]`},
		{"malformed JSON is the decoder's to answer", CommentTicket, `{"comment":`, ``},
		{"an empty body is the handler's to answer", CommentTicket, ``, ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
			err := CheckBody(r, c.op)
			var got []byte
			if err != nil {
				verrs, ok := err.(apperr.ValidationErrors)
				if !ok {
					t.Fatalf("%v is not a validation error", err)
				}
				sortByLoc(verrs)
				got, _ = json.Marshal(verrs)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			// The handler still reads the body whole.
			var rest bytes.Buffer
			rest.ReadFrom(r.Body)
			if rest.String() != c.body {
				t.Errorf("the handler reads %q, not the body", rest.String())
			}
		})
	}
}

func sortByLoc(v apperr.ValidationErrors) {
	key := func(f apperr.FieldError) string { b, _ := json.Marshal(f.Loc); return string(b) }
	for i := range v {
		for j := i + 1; j < len(v); j++ {
			if key(v[j]) < key(v[i]) {
				v[i], v[j] = v[j], v[i]
			}
		}
	}
}

// Every request schema compiles, so no operation fails at its first call.
func TestEveryRequestSchemaCompiles(t *testing.T) {
	for _, op := range append(Operations, CreateTestFromConversation) {
		if op.Request == "" {
			continue
		}
		if _, err := requestSchema(op.Request); err != nil {
			t.Errorf("%s: %v", op.Name, err)
		}
	}
}

// IDPattern says what ids.Valid checks.
func TestIDPatternIsTheIDGrammar(t *testing.T) {
	s, err := requestSchema("Id")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "tkt_1-A", strings.Repeat("x", 128), strings.Repeat("x", 129), "", "a b", "a/b", "a.b", "é", "a\n"} {
		if got, want := s.Validate(id) == nil, ids.Valid(id); got != want {
			t.Errorf("%q: the pattern says %v, ids.Valid %v", id, got, want)
		}
	}
}

// A member named like a property but for its case is one the schema does
// not check; encoding/json would read it into the property. The handler
// reads the body without it, however deep it is, and so gets only what
// the schema checked.
func TestHandlersReadOnlyTheMembersTheSchemaChecked(t *testing.T) {
	for _, c := range []struct {
		name string
		op   Operation
		body string
		want string // what the handler reads
	}{
		{"top level and nested", CreateWebhook,
			`{"events":["call_started"],"EVENTS":["bogus"],"Url":"https://10.0.0.1/","url":"https://example.com/",` +
				`"retry_config":{"max_retries":1,"Max_Retries":1000},"Retry_Config":{"retry_delay":0},"other":"<kept>","ſecret":"x"}`,
			`{"events":["call_started"],"other":"<kept>","retry_config":{"max_retries":1},"url":"https://example.com/"}`},
		{"in an event's data, by its event's schema", IngestEvent,
			`{"event":"conversation_ended","data":{"conversation_id":"c1","Conversation_Id":"../x","note":"<as is>"}}`,
			`{"data":{"conversation_id":"c1","note":"<as is>"},"event":"conversation_ended"}`},
		{"an optional member sent as null, as the SDK sends one left undefined", RunTests,
			`{"tests":[{"test_id":"t1","workflow_node_id":null}],"branch_id":null,"repeat_count":null,"agent_config_override":null}`,
			`{"tests":[{"test_id":"t1"}]}`},
		{"null kept where it means something (a PATCH clears)", UpdateTicket,
			`{"priority":null,"assignee_user_id":null,"title":null,"status":null}`,
			`{"assignee_user_id":null,"priority":null}`},
		{"in an array's items", CreateTicket,
			`{"conversation_id":"conv_1","qa_comment":"x","turn_comments":[{"turn_index":1,"comment":"c","Turn_Index":-5}]}`,
			`{"conversation_id":"conv_1","qa_comment":"x","turn_comments":[{"comment":"c","turn_index":1}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
			if err := CheckBody(r, c.op); err != nil {
				t.Fatalf("refused: %v", err)
			}
			var read bytes.Buffer
			read.ReadFrom(r.Body)
			if got := strings.TrimSpace(read.String()); got != c.want {
				t.Errorf("the handler reads %s\nwant %s", got, c.want)
			}
		})
	}
}

// The rules every body follows come before its schema: an integer is one
// whatever its spelling (the handler reads the body respelt), a number
// beyond a float64 or a lone surrogate is a 422 at its loc.
func TestCheckBodyAppliesTheValueRules(t *testing.T) {
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"simulation_specification":{"simulated_user_config":{"first_message":"hi"}},"new_turns_limit":5.0}`))
	if err := CheckBody(r, SimulateConversation); err != nil {
		t.Fatalf("new_turns_limit 5.0: %v", err)
	}
	var in struct {
		Limit *int `json:"new_turns_limit"`
	}
	var rest bytes.Buffer
	rest.ReadFrom(r.Body)
	if err := apperr.DecodeJSON(rest.Bytes(), &in); err != nil || in.Limit == nil || *in.Limit != 5 || r.ContentLength != int64(rest.Len()) {
		t.Fatalf("the handler reads %s: %v", rest.String(), err)
	}
	for body, want := range map[string]string{
		`{"simulation_specification":{"simulated_user_config":{"first_message":"hi"}},"new_turns_limit":5.5}`:   `["body","new_turns_limit"] int_type`,
		`{"simulation_specification":{"simulated_user_config":{"first_message":"hi"}},"new_turns_limit":1e400}`: `["body","new_turns_limit"] finite_number`,
		`{"simulation_specification":{"simulated_user_config":{"first_message":"\ud800"}}}`:                     `["body","simulation_specification","simulated_user_config","first_message"] string_unicode`,
	} {
		err := CheckBody(httptest.NewRequest("POST", "/", strings.NewReader(body)), SimulateConversation)
		verrs, ok := err.(apperr.ValidationErrors)
		if !ok || len(verrs) != 1 {
			t.Errorf("%s: %v", body, err)
			continue
		}
		loc, _ := json.Marshal(verrs[0].Loc)
		if got := string(loc) + " " + verrs[0].Type; got != want {
			t.Errorf("%s: %s, want %s", body, got, want)
		}
	}
}
