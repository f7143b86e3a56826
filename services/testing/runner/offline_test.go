package runner

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

const hoursPrompt = "You help Ann book tables. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings."

var bookTable = Tool{ID: "tool_book", Name: "book_table", Description: "Book a table reservation for guests",
	Parameters: json.RawMessage(`{"type":"object","properties":{"guests":{"type":"number"},"date":{"type":"string"}}}`)}

func userTurn(s string) Turn  { return Turn{Role: "user", Text: s} }
func agentTurn(s string) Turn { return Turn{Role: "agent", Text: s} }

func TestOfflineIdentity(t *testing.T) {
	if (Offline{}).Provider() != "offline" || (Offline{}).ModelName() != "offline-v1" {
		t.Fatal("offline model identity changed")
	}
}

func TestOfflineRespond(t *testing.T) {
	cases := []struct {
		name string
		conv Conversation
		want Turn
	}{
		{"answers with the prompt sentence sharing most words with the question",
			Conversation{SystemPrompt: hoursPrompt, Turns: []Turn{agentTurn("Hello Ann!"), userTurn("What are your opening hours?")}},
			agentTurn("Our opening hours are nine to five every weekday.")},
		{"another question picks another sentence",
			Conversation{SystemPrompt: hoursPrompt, Turns: []Turn{userTurn("Do I get refunds for cancelled bookings?")}},
			agentTurn("Refunds are never given for cancelled bookings.")},
		{"the last user message decides",
			Conversation{SystemPrompt: hoursPrompt, Turns: []Turn{userTurn("Refunds?"), agentTurn("..."), userTurn("And the opening hours?")}},
			agentTurn("Our opening hours are nine to five every weekday.")},
		{"without a user message the first message is used",
			Conversation{SystemPrompt: hoursPrompt, Turns: []Turn{agentTurn("Hello Ann, how can I help?")}},
			agentTurn("Hello Ann, how can I help?")},
		{"a question nothing in the prompt answers gets the first message",
			Conversation{SystemPrompt: hoursPrompt, Turns: []Turn{agentTurn("Hello Ann, how can I help?"), userTurn("Quantum chromodynamics?")}},
			agentTurn("Hello Ann, how can I help?")},
		{"the first agent line with text is used",
			Conversation{Turns: []Turn{{Role: "agent", Calls: []Call{{Name: "x"}}}, agentTurn("First words."), agentTurn("Second."), userTurn("zzz")}},
			agentTurn("First words.")},
		{"no prompt and no first message gets the apology",
			Conversation{Turns: []Turn{userTurn("What are your opening hours?")}},
			agentTurn("I'm sorry, I can't help with that.")},
		{"calls the tool whose name and description match the request",
			Conversation{SystemPrompt: hoursPrompt, Tools: []Tool{{Name: "end_call", Description: "Hang up"}, bookTable},
				Turns: []Turn{userTurn("Please book a table for 4 guests, date friday")}},
			Turn{Role: "agent", Calls: []Call{{ID: "call_book_table", Name: "book_table", Arguments: `{"date":"friday","guests":4}`}}}},
		{"tools that match nothing are not called",
			Conversation{SystemPrompt: hoursPrompt, Tools: []Tool{bookTable}, Turns: []Turn{userTurn("What are your opening hours?")}},
			agentTurn("Our opening hours are nine to five every weekday.")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, u, err := Offline{}.Respond(context.Background(), c.conv)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("reply %+v, want %+v", got, c.want)
			}
			if u.Calls != 1 || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokens < int64(len(strings.Fields(c.conv.SystemPrompt))) {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}

func TestOfflineIsDeterministic(t *testing.T) {
	conv := Conversation{SystemPrompt: hoursPrompt, Tools: []Tool{bookTable, {Name: "lookup_hours", Description: "Opening hours lookup",
		Parameters: json.RawMessage(`{"properties":{"day":{"type":"string"},"zone":{"type":"string"}}}`)}},
		Turns: []Turn{userTurn("What opening hours on day monday, zone CET?")}}
	judge := JudgeInput{Conditions: []string{"states the opening hours"}, SuccessExamples: []string{"Open nine to five.", "We open at nine."},
		FailureExamples: []string{"I do not know.", "We are closed."}, Reply: agentTurn("We open at nine to five.")}
	firstT, firstU, _ := Offline{}.Respond(context.Background(), conv)
	firstV, _, _ := Offline{}.Judge(context.Background(), judge)
	for i := 0; i < 50; i++ {
		tu, u, _ := Offline{}.Respond(context.Background(), conv)
		v, _, _ := Offline{}.Judge(context.Background(), judge)
		if !reflect.DeepEqual(tu, firstT) || u != firstU || !reflect.DeepEqual(v, firstV) {
			t.Fatalf("run %d differs:\n%+v %+v %+v\n%+v %+v %+v", i, tu, u, v, firstT, firstU, firstV)
		}
	}
	if len(firstT.Calls) != 1 || firstT.Calls[0].Name != "lookup_hours" || firstT.Calls[0].Arguments != `{"day":"monday","zone":"CET"}` {
		t.Fatalf("tool reply %+v", firstT)
	}
}

func TestOfflineArguments(t *testing.T) {
	schema := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	cases := []struct {
		name   string
		schema json.RawMessage
		msg    string
		want   string
	}{
		{"number from the first number", schema(`"guests":{"type":"number"}`), "Table for 4 guests at 7", `{"guests":4}`},
		{"negative decimal", schema(`"delta":{"type":"number"}`), "move by -2.5 degrees", `{"delta":-2.5}`},
		{"integer property", schema(`"n":{"type":"integer"}`), "n is 12", `{"n":12}`},
		{"no number: property absent", schema(`"guests":{"type":"number"}`), "a table please", `{}`},
		{"word after the property name", schema(`"city":{"type":"string"}`), "Weather in city Paris, please", `{"city":"Paris"}`},
		{"name = value", schema(`"city":{"type":"string"}`), "City = Berlin.", `{"city":"Berlin"}`},
		{"name =value", schema(`"city":{"type":"string"}`), "city =Rome!", `{"city":"Rome"}`},
		{"underscores read as spaces", schema(`"first_name":{"type":"string"}`), "my first name Ada", `{"first_name":"Ada"}`},
		{"otherwise the whole message", schema(`"query":{"type":"string"}`), "find Italian food", `{"query":"find Italian food"}`},
		{"property name at the very end", schema(`"city":{"type":"string"}`), "which city", `{"city":"which city"}`},
		{"nothing after the property name", schema(`"city":{"type":"string"}`), "which city ", `{}`},
		{"no schema", nil, "anything", `{}`},
		{"invalid schema", json.RawMessage(`not json`), "anything", `{}`},
		// Characters whose lower case has another UTF-8 length must not
		// shift the value read (Ⱥ is 2 bytes, ⱥ 3; K, the Kelvin sign, is
		// 3 bytes, k 1) nor slice out of range.
		{"lower case longer than the original", schema(`"city":{"type":"string"}`), "ȺȺȺȺȺȺȺȺȺȺ city Paris", `{"city":"Paris"}`},
		{"lower case shorter than the original", schema(`"city":{"type":"string"}`), "KKKKKK city Paris", `{"city":"Paris"}`},
		{"invalid UTF-8 before the name", schema(`"city":{"type":"string"}`), "\xff\xfe\xff city Oslo", `{"city":"Oslo"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := offlineArguments(c.schema, c.msg); got != c.want {
				t.Fatalf("offlineArguments(%q) = %s, want %s", c.msg, got, c.want)
			}
		})
	}
}

func TestOfflineJudge(t *testing.T) {
	success := []string{"We are open nine to five every weekday.", "Yes, you will get a full refund right away."}
	failure := []string{"I do not know.", "Refunds are never given for cancelled bookings."}
	cases := []struct {
		name        string
		in          JudgeInput
		result      string
		summaryHas  []string
		messagesHas []string
	}{
		{"closest to a success example passes",
			JudgeInput{SuccessExamples: success, FailureExamples: failure, Reply: agentTurn("We are open nine to five on every weekday.")},
			domain.ConditionSuccess,
			[]string{"closer to success example #1", "than to any failure example"},
			[]string{"Closest success example #1, word-set similarity", "Closest failure example #"}},
		{"the second success example can be the closest",
			JudgeInput{SuccessExamples: success, FailureExamples: failure, Reply: agentTurn("Yes, you will get a full refund.")},
			domain.ConditionSuccess, []string{"success example #2"}, []string{"Closest success example #2"}},
		{"closest to a failure example fails",
			JudgeInput{SuccessExamples: success, FailureExamples: failure, Reply: agentTurn("Refunds are never given for cancelled bookings!")},
			domain.ConditionFailure,
			[]string{"closer to failure example #2 (1.00)", "than to any success example"},
			[]string{"Closest failure example #2, word-set similarity 1.00."}},
		{"failure examples alone decide",
			JudgeInput{FailureExamples: failure, Reply: agentTurn("I do not know.")},
			domain.ConditionFailure, []string{"failure example #1 (1.00)"}, nil},
		{"success examples alone decide",
			JudgeInput{SuccessExamples: success, Reply: agentTurn("We are open nine to five.")},
			domain.ConditionSuccess, []string{"success example #1"}, nil},
		{"examples win over conditions",
			JudgeInput{Conditions: []string{"mentions quantum physics"}, SuccessExamples: success, Reply: agentTurn("We are open nine to five.")},
			domain.ConditionSuccess, []string{"success example #1"}, nil},
		{"a tie between examples falls back to the conditions",
			JudgeInput{Conditions: []string{"states the opening hours nine to five"}, SuccessExamples: []string{"alpha"}, FailureExamples: []string{"beta"},
				Reply: agentTurn("Our opening hours are nine to five.")},
			domain.ConditionSuccess, []string{"at least half the content words"}, []string{`Condition "states the opening hours nine to five": 4 of 5 content words in the reply.`}},
		{"a condition with half its words passes",
			JudgeInput{Conditions: []string{"opening hours nine five"}, Reply: agentTurn("the hours are nine")},
			domain.ConditionSuccess, nil, []string{"2 of 4 content words"}},
		{"a condition with fewer than half its words fails",
			JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, Reply: agentTurn("I do not know the schedule.")},
			domain.ConditionFailure, []string{"lacks most content words of a success condition"}, []string{"0 of 5 content words"}},
		{"a condition with one word of three fails",
			JudgeInput{Conditions: []string{"opening hours weekday"}, Reply: agentTurn("the hours are long")},
			domain.ConditionFailure, []string{"lacks most content words"}, []string{"1 of 3 content words"}},
		{"every condition must hold",
			JudgeInput{Conditions: []string{"opening hours", "refund policy"}, Reply: agentTurn("Our opening hours are long.")},
			domain.ConditionFailure, nil, []string{`Condition "opening hours": 2 of 2`, `Condition "refund policy": 0 of 2`}},
		{"tool calls count as reply words",
			JudgeInput{Conditions: []string{"book table guests"}, Reply: Turn{Role: "agent", Calls: []Call{{Name: "book_table", Arguments: `{"guests":4}`}}}},
			domain.ConditionSuccess, nil, []string{"3 of 3"}},
		{"nothing to decide by is unknown",
			JudgeInput{Reply: agentTurn("anything")},
			domain.ConditionUnknown, []string{"no examples or condition to decide by"}, nil},
		{"a tie without conditions is unknown",
			JudgeInput{SuccessExamples: []string{"alpha"}, FailureExamples: []string{"beta"}, Reply: agentTurn("gamma")},
			domain.ConditionUnknown, []string{"no examples or condition"}, []string{"Closest success example #1, word-set similarity 0.00."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, u, err := Offline{}.Judge(context.Background(), c.in)
			if err != nil {
				t.Fatal(err)
			}
			if v.Result != c.result {
				t.Fatalf("result %q, want %q (%+v)", v.Result, c.result, v)
			}
			if v.Summary == "" {
				t.Fatal("no rationale summary")
			}
			for _, s := range c.summaryHas {
				if !strings.Contains(v.Summary, s) {
					t.Fatalf("summary %q lacks %q", v.Summary, s)
				}
			}
			all := strings.Join(v.Messages, "\n")
			for _, s := range c.messagesHas {
				if !strings.Contains(all, s) {
					t.Fatalf("messages %q lack %q", v.Messages, s)
				}
			}
			if u != (Usage{Calls: 1}) {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"customer": "Ann", "n": "3", "a.b": "dotted", "empty": ""}
	cases := []struct{ in, want string }{
		{"Hello {{customer}}!", "Hello Ann!"},
		{"Hello {{ customer }}, {{n}} guests", "Hello Ann, 3 guests"},
		{"{{customer}}{{customer}}", "AnnAnn"},
		{"{{a.b}} and {{empty}}.", "dotted and ."},
		{"Unknown {{nobody}} stays", "Unknown {{nobody}} stays"},
		{"Not a {placeholder} or {{ two words }}", "Not a {placeholder} or {{ two words }}"},
		{"", ""},
	}
	for _, c := range cases {
		if got := Substitute(c.in, vars); got != c.want {
			t.Errorf("Substitute(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseAgentConfig(t *testing.T) {
	cfg := ParseAgentConfig([]byte(`{"agent":{"first_message":"Hi {{customer}}",
		"dynamic_variables":{"dynamic_variable_placeholders":{"customer":"guest","n":3,"vip":true,"none":null,"obj":{"a":1}}},
		"prompt":{"prompt":"Be kind.","llm":"gpt-4o-mini","tools":[
			{"id":"t1","name":"book_table","description":"Book","parameters":{"type":"object"}},
			{"name":"webhook","api_schema":{"request_body_schema":{"properties":{"x":{}}}}},
			{"description":"nameless, skipped"},
			"not an object"]}}}`))
	want := AgentConfig{
		SystemPrompt: "Be kind.", FirstMessage: "Hi {{customer}}", LLM: "gpt-4o-mini",
		DynamicVariables: map[string]string{"customer": "guest", "n": "3", "vip": "true", "none": "", "obj": `{"a":1}`},
		Tools: []Tool{
			{ID: "t1", Name: "book_table", Description: "Book", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "webhook", Parameters: json.RawMessage(`{"properties":{"x":{}}}`)},
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config\n got  %+v\n want %+v", cfg, want)
	}
	for _, bad := range [][]byte{nil, []byte("not json"), []byte(`{"agent":"x"}`)} {
		if c := ParseAgentConfig(bad); c.SystemPrompt != "" || c.DynamicVariables == nil || len(c.Tools) != 0 {
			t.Fatalf("ParseAgentConfig(%q) = %+v", bad, c)
		}
	}
}

func TestUsageAdd(t *testing.T) {
	u := Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, Calls: 1}
	u.Add(Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30, Calls: 2})
	if u != (Usage{PromptTokens: 11, CompletionTokens: 22, TotalTokens: 33, Calls: 3}) {
		t.Fatalf("%+v", u)
	}
}
