package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/model"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

const hoursPrompt = "You help Ann book tables. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings."

var bookTable = model.Tool{ID: "tool_book", Name: "book_table", Description: "Book a table reservation for guests",
	Parameters: json.RawMessage(`{"type":"object","properties":{"guests":{"type":"number"},"date":{"type":"string"}}}`)}

func userTurn(s string) model.Turn  { return model.Turn{Role: "user", Text: s} }
func agentTurn(s string) model.Turn { return model.Turn{Role: "agent", Text: s} }

func TestOfflineIdentity(t *testing.T) {
	if (Model{}).Provider() != "offline" || (Model{}).ModelName() != "offline-v2" {
		t.Fatal("offline model identity changed")
	}
	if (Lexical{}).Provider() != "offline" || (Lexical{}).ModelName() != "offline-v1" {
		t.Fatal("lexical offline model identity changed")
	}
}

func TestOfflineRespond(t *testing.T) {
	checkReplies(t, []replyCase{
		{"answers with the prompt sentence sharing most words with the question",
			model.Conversation{SystemPrompt: hoursPrompt, Turns: []model.Turn{agentTurn("Hello Ann!"), userTurn("What are your opening hours?")}},
			agentTurn("Our opening hours are nine to five every weekday.")},
		{"another question picks another sentence",
			model.Conversation{SystemPrompt: hoursPrompt, Turns: []model.Turn{userTurn("Do I get refunds for cancelled bookings?")}},
			agentTurn("Refunds are never given for cancelled bookings.")},
		{"the last user message decides",
			model.Conversation{SystemPrompt: hoursPrompt, Turns: []model.Turn{userTurn("Refunds?"), agentTurn("..."), userTurn("And the opening hours?")}},
			agentTurn("Our opening hours are nine to five every weekday.")},
		{"without a user message the first message is used",
			model.Conversation{SystemPrompt: hoursPrompt, Turns: []model.Turn{agentTurn("Hello Ann, how can I help?")}},
			agentTurn("Hello Ann, how can I help?")},
		{"a question nothing in the configuration answers gets the refusal",
			model.Conversation{SystemPrompt: hoursPrompt, Turns: []model.Turn{agentTurn("Hello Ann, how can I help?"), userTurn("Quantum chromodynamics?")}},
			agentTurn(Refusal)},
		{"the first agent line with text is used",
			model.Conversation{Turns: []model.Turn{{Role: "agent", Calls: []model.Call{{Name: "x"}}}, agentTurn("First words."), agentTurn("Second."), userTurn("Hi!")}},
			agentTurn("First words.")},
		{"no prompt and no first message: the question is not covered",
			model.Conversation{Turns: []model.Turn{userTurn("What are your opening hours?")}},
			agentTurn(Refusal)},
		{"calls the tool whose name and description match the request",
			model.Conversation{SystemPrompt: hoursPrompt, Tools: []model.Tool{{Name: "end_call", Description: "Hang up"}, bookTable},
				Turns: []model.Turn{userTurn("Please book a table for 4 guests, date friday")}},
			model.Turn{Role: "agent", Calls: []model.Call{{ID: "call_book_table", Name: "book_table", Arguments: `{"date":"friday","guests":4}`}}}},
		{"tools that match nothing are not called",
			model.Conversation{SystemPrompt: hoursPrompt, Tools: []model.Tool{bookTable}, Turns: []model.Turn{userTurn("What are your opening hours?")}},
			agentTurn("Our opening hours are nine to five every weekday.")},
	})
}

// replyCase is a conversation and the offline model's reply to it.
type replyCase struct {
	name string
	conv model.Conversation
	want model.Turn
}

// checkReplies has the offline model answer each case: the reply is the
// case's, in one call whose usage counts at least the prompt's words.
func checkReplies(t *testing.T, cases []replyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, u, err := Model{}.Respond(context.Background(), c.conv)
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
	conv := model.Conversation{SystemPrompt: hoursPrompt, Tools: []model.Tool{bookTable, {Name: "lookup_hours", Description: "Opening hours lookup",
		Parameters: json.RawMessage(`{"properties":{"day":{"type":"string"},"zone":{"type":"string"}}}`)}},
		Turns: []model.Turn{userTurn("What opening hours on day monday, zone CET?")}}
	judge := model.JudgeInput{Conditions: []string{"states the opening hours"}, SuccessExamples: []string{"Open nine to five.", "We open at nine."},
		FailureExamples: []string{"I do not know.", "We are closed."}, Reply: agentTurn("We open at nine to five.")}
	firstT, firstU, _ := Model{}.Respond(context.Background(), conv)
	firstV, _, _ := Model{}.Judge(context.Background(), judge)
	for i := 0; i < 50; i++ {
		tu, u, _ := Model{}.Respond(context.Background(), conv)
		v, _, _ := Model{}.Judge(context.Background(), judge)
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

// TestOfflineLexicalJudge: the first offline judge, kept to compare
// with, still judges by shared words.
func TestOfflineLexicalJudge(t *testing.T) {
	success := []string{"We are open nine to five every weekday.", "Yes, you will get a full refund right away."}
	failure := []string{"I do not know.", "Refunds are never given for cancelled bookings."}
	cases := []struct {
		name        string
		in          model.JudgeInput
		result      string
		summaryHas  []string
		messagesHas []string
	}{
		{"closest to a success example passes",
			model.JudgeInput{SuccessExamples: success, FailureExamples: failure, Reply: agentTurn("We are open nine to five on every weekday.")},
			domain.ConditionSuccess,
			[]string{"closer to success example #1", "than to any failure example"},
			[]string{"Closest success example #1, word-set similarity", "Closest failure example #"}},
		{"the second success example can be the closest",
			model.JudgeInput{SuccessExamples: success, FailureExamples: failure, Reply: agentTurn("Yes, you will get a full refund.")},
			domain.ConditionSuccess, []string{"success example #2"}, []string{"Closest success example #2"}},
		{"closest to a failure example fails",
			model.JudgeInput{SuccessExamples: success, FailureExamples: failure, Reply: agentTurn("Refunds are never given for cancelled bookings!")},
			domain.ConditionFailure,
			[]string{"closer to failure example #2 (1.00)", "than to any success example"},
			[]string{"Closest failure example #2, word-set similarity 1.00."}},
		{"failure examples alone decide",
			model.JudgeInput{FailureExamples: failure, Reply: agentTurn("I do not know.")},
			domain.ConditionFailure, []string{"failure example #1 (1.00)"}, nil},
		{"a word shared with a lone failure example is no failure: the conditions decide",
			model.JudgeInput{Conditions: []string{"states the opening hours nine to five"}, FailureExamples: []string{"I do not know."},
				Reply: agentTurn("Our opening hours are nine to five, did you know?")},
			domain.ConditionSuccess, []string{"at least half the content words"}, []string{"Closest failure example #1"}},
		{"a word shared with a lone success example is no success",
			model.JudgeInput{Conditions: []string{"states the refund policy"}, SuccessExamples: []string{"We are open nine to five."},
				Reply: agentTurn("We are sorry.")},
			domain.ConditionFailure, []string{"lacks most content words"}, nil},
		{"success examples alone decide",
			model.JudgeInput{SuccessExamples: success, Reply: agentTurn("We are open nine to five.")},
			domain.ConditionSuccess, []string{"success example #1"}, nil},
		{"examples win over conditions",
			model.JudgeInput{Conditions: []string{"mentions quantum physics"}, SuccessExamples: success, Reply: agentTurn("We are open nine to five.")},
			domain.ConditionSuccess, []string{"success example #1"}, nil},
		{"a tie between examples falls back to the conditions",
			model.JudgeInput{Conditions: []string{"states the opening hours nine to five"}, SuccessExamples: []string{"alpha"}, FailureExamples: []string{"beta"},
				Reply: agentTurn("Our opening hours are nine to five.")},
			domain.ConditionSuccess, []string{"at least half the content words"}, []string{`Condition "states the opening hours nine to five": 4 of 4 content words in the reply (found: opening, hours, nine, five; missing: none).`}},
		{"a condition with half its words passes",
			model.JudgeInput{Conditions: []string{"opening hours weekday evening"}, Reply: agentTurn("the hours are on weekdays")},
			domain.ConditionSuccess, nil, []string{"2 of 4 content words"}},
		{"a condition with fewer than half its words fails",
			model.JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, Reply: agentTurn("I do not know the schedule.")},
			domain.ConditionFailure, []string{"lacks most content words of a success condition"}, []string{"0 of 4 content words"}},
		{"a condition with one word of three fails",
			model.JudgeInput{Conditions: []string{"opening hours weekday"}, Reply: agentTurn("the hours are long")},
			domain.ConditionFailure, []string{"lacks most content words"}, []string{"1 of 3 content words"}},
		{"every condition must hold",
			model.JudgeInput{Conditions: []string{"opening hours", "refund policy"}, Reply: agentTurn("Our opening hours are long.")},
			domain.ConditionFailure, nil, []string{`Condition "opening hours": 2 of 2`, `Condition "refund policy": 0 of 2`}},
		{"tool calls count as reply words",
			model.JudgeInput{Conditions: []string{"book table guests"}, Reply: model.Turn{Role: "agent", Calls: []model.Call{{Name: "book_table", Arguments: `{"guests":4}`}}}},
			domain.ConditionSuccess, nil, []string{"3 of 3"}},
		{"nothing to decide by is unknown",
			model.JudgeInput{Reply: agentTurn("anything")},
			domain.ConditionUnknown, []string{"no examples or condition to decide by"}, nil},
		{"a tie without conditions is unknown",
			model.JudgeInput{SuccessExamples: []string{"alpha"}, FailureExamples: []string{"beta"}, Reply: agentTurn("gamma")},
			domain.ConditionUnknown, []string{"the reply is like none of the examples (word-set similarity 0.00 to each): they do not decide it, and the test has no success condition to decide by."},
			[]string{"Closest success example #1, word-set similarity 0.00."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, u, err := Lexical{}.Judge(context.Background(), c.in)
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
			if u != (model.Usage{Calls: 1}) {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}

func TestOfflineStem(t *testing.T) {
	same := [][]string{
		{"refund", "refunds", "refunded", "refunding", "refundable"},
		{"policy", "policies"},
		{"cancel", "cancels", "cancelled", "canceled", "cancelling", "cancellation", "cancellations"},
		{"book", "books", "booked", "booking", "bookings"},
		{"open", "opens", "opened", "opening"},
		{"reserve", "reserved", "reservation", "reservations"},
		{"ship", "shipped", "shipping", "shipment"},
		{"apply", "applies", "applied"},
		{"pay", "payment", "payments"},
		{"confirm", "confirmed", "confirmation"},
		{"change", "changes", "changed", "changing"},
		{"price", "prices", "priced", "pricing"},
		{"use", "uses", "used", "using"},
		{"call", "calls", "called", "calling"},
		{"delivery", "deliveries"},
		{"week", "weekly"},
		{"greet", "greets", "greeting"},
		{"box", "boxes"},
		{"class", "classes"},
		{"add", "added"},
	}
	for _, group := range same {
		for _, w := range group[1:] {
			if stem(w) != stem(group[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: want them equal", w, stem(w), group[0], stem(group[0]))
			}
		}
	}
	different := [][2]string{{"refund", "refuse"}, {"book", "box"}, {"hour", "house"}, {"status", "state"}, {"ship", "shop"}}
	for _, d := range different {
		if stem(d[0]) == stem(d[1]) {
			t.Errorf("stem(%q) = stem(%q) = %q: want them different", d[0], d[1], stem(d[0]))
		}
	}
	for _, w := range []string{"", "a", "us", "naïve", "mp3", "ⱥⱥⱥs"} {
		if stem(w) != w {
			t.Errorf("stem(%q) = %q: short and non-ASCII words stay", w, stem(w))
		}
	}
}

func TestOfflineContentTerms(t *testing.T) {
	got := contentTerms("The agent explains the REFUND policy: refunds within thirty days, 30 days with a receipt!", nil)
	want := []term{{"refund", "refund", false}, {"policy", "policy", false}, {"within", "within", false}, {"thirty", "30", true},
		{"days", "day", false}, {"receipt", "receipt", false}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("contentTerms = %+v, want %+v", got, want)
	}
	// Past 32 terms a set dedupes: the same terms, in the same order.
	var long []string
	for i := range 100 {
		long = append(long, string([]byte{'k', 'a' + byte(i%40%26), 'a' + byte(i%40/26), 'z'}), fmt.Sprint(i%50))
	}
	terms := contentTerms(strings.Join(long, " "), nil)
	if len(terms) != 40+50 {
		t.Fatalf("%d terms", len(terms))
	}
	seen := map[string]bool{}
	for _, term := range terms {
		if seen[term.stem] {
			t.Fatalf("%q twice", term.stem)
		}
		seen[term.stem] = true
	}
	if terms[0].stem != "kaaz" || terms[1].stem != "0" || terms[2].stem != "kbaz" {
		t.Fatalf("first terms %+v", terms[:2])
	}
}

func TestOfflineSplitWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Can't REFUND it.", []string{"cant", "refund", "it"}},
		{"the customer’s receipt", []string{"the", "customers", "receipt"}},
		{"$1,000 or 25.50, at 9:00", []string{"1000", "or", "25.50", "at", "9:00"}},
		{"9am-5pm, 30-day", []string{"9", "am", "5", "pm", "30", "day"}},
		{"1,2,3 and 1,0000", []string{"1", "2", "3", "and", "1", "0000"}},
		{"end.", []string{"end"}},
		{"Crème BRÛLÉE’s 1,000 9am, can't", []string{"crème", "brûlées", "1000", "9", "am", "cant"}},
		{"", nil},
	}
	for _, c := range cases {
		if got := splitWords(c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOfflineKnowledge(t *testing.T) {
	cases := []struct {
		name   string
		prompt string
		want   []string // the candidate answers' texts
		stems  map[int][]string
	}{
		{"sentences, abbreviations, initials, decimals and addresses",
			"You are Ava, e.g. a helper. Mr. J. Smith runs acme.com! Prices start at 9.50 dollars. Really?? Yes...",
			[]string{"You are Ava, e.g. a helper.", "Mr. J. Smith runs acme.com!", "Prices start at 9.50 dollars.", "Yes..."}, nil},
		{"lines and bullets",
			"Be kind\n- Refunds within 30 days.\n* Receipt required\n• Open weekdays\n1. First\n2) Second\na) Third",
			[]string{"Be kind.", "Refunds within 30 days.", "Receipt required.", "Open weekdays.", "First.", "Second.", "Third."}, nil},
		{"a heading lends its words up to the blank line after its sentences",
			"# Refund policy\n\n- Within 30 days.\n- With a receipt.\n\nWe sell shoes.",
			[]string{"Within 30 days.", "With a receipt.", "We sell shoes."},
			map[int][]string{0: {"refund", "policy", "within", "30", "day"}, 1: {"refund", "policy", "receipt"}, 2: {"sell", "sho"}}},
		{"a lead-in prefixes its list up to a blank line",
			"Opening hours:\n- Weekdays nine to five.\n- Saturdays ten to two.\n\nWe sell shoes.",
			[]string{"Opening hours: Weekdays nine to five.", "Opening hours: Saturdays ten to two.", "We sell shoes."},
			map[int][]string{1: {"open", "hour", "saturday", "ten", "two"}, 2: {"sell", "sho"}}},
		{"a question lends its words to its answer",
			"Q: Do you deliver?\nA: Yes, within 5 miles.\nQuestion: Is parking free? Answer: No.",
			[]string{"Yes, within 5 miles.", "No."},
			map[int][]string{0: {"deliver", "within", "5", "mil"}, 1: {"park", "fre"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := knowledge(c.prompt)
			var got []string
			for _, s := range ss {
				got = append(got, s.text)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("sentences %q, want %q", got, c.want)
			}
			// each sentence is matched with the words its heading, lead-in
			// or question lends it
			for i, stems := range c.stems {
				for _, st := range stems {
					if !strings.Contains(strings.ToLower(ss[i].match), st) {
						t.Errorf("sentence %d is matched as %q, which lacks %q", i, ss[i].match, st)
					}
				}
			}
		})
	}
}

func TestOfflineRespondFromTheConfiguration(t *testing.T) {
	const prompt = "# Refunds\n- Refunds are possible within 30 days with a receipt.\n- Refunds go back to the card you paid with.\n\n" +
		"Opening hours:\n- Weekdays nine to five.\n- Saturdays ten to two.\n\nQ: Do you deliver?\nA: Yes, within 5 miles."
	checkReplies(t, []replyCase{
		{"every sentence that matches best, in prompt order",
			model.Conversation{SystemPrompt: prompt, Turns: []model.Turn{userTurn("How do refunds work?")}},
			agentTurn("Refunds are possible within 30 days with a receipt. Refunds go back to the card you paid with.")},
		{"sentences adding words the best one lacks",
			model.Conversation{SystemPrompt: prompt, Turns: []model.Turn{userTurn("Are you open on Saturdays, and do you deliver?")}},
			agentTurn("Opening hours: Saturdays ten to two. Yes, within 5 miles.")},
		{"an FAQ's answer",
			model.Conversation{SystemPrompt: prompt, Turns: []model.Turn{userTurn("Can you deliver my order?")}},
			agentTurn("Yes, within 5 miles.")},
		{"a greeting without a first message",
			model.Conversation{SystemPrompt: prompt, Turns: []model.Turn{userTurn("Hey there!")}},
			agentTurn(offlineHello)},
		{"a message without a content word gets the first message",
			model.Conversation{SystemPrompt: prompt, Turns: []model.Turn{agentTurn("Hi, Acme here."), userTurn("OK, thanks.")}},
			agentTurn("Hi, Acme here.")},
		{"the first message answers too",
			model.Conversation{Turns: []model.Turn{agentTurn("Hi, this is Ava from Acme Dental."), userTurn("Is this Acme Dental?")}},
			agentTurn("Hi, this is Ava from Acme Dental.")},
		{"a tool sharing fewer words than a sentence is not called",
			model.Conversation{SystemPrompt: hoursPrompt, Tools: []model.Tool{bookTable}, Turns: []model.Turn{userTurn("Do I get refunds for cancelled bookings?")}},
			agentTurn("Refunds are never given for cancelled bookings.")},
	})
}

func TestOfflineLexicalJudgeNormalises(t *testing.T) {
	refusal := agentTurn(Refusal)
	asked := []model.Turn{userTurn("Do you sell gift cards?")}
	checkVerdicts(t, Lexical{}.Judge, []judgeCase{
		{"stems match",
			model.JudgeInput{Conditions: []string{"confirms the cancellation and the refund"}, Reply: agentTurn("Your booking is cancelled; we refunded you.")},
			domain.ConditionSuccess, "", "found: cancellation, refund; missing: confirms"},
		{"number words and digits are the same number",
			model.JudgeInput{Conditions: []string{"thirty days"}, Reply: agentTurn("Within 30 days.")}, domain.ConditionSuccess, "", "2 of 2"},
		{"a different number fails even when every other word is there",
			model.JudgeInput{Conditions: []string{"refunds within 60 days with a receipt"}, Reply: agentTurn("Refunds within 30 days with a receipt.")},
			domain.ConditionFailure, "lacks the number 60", "The number 60 it states is not in the reply"},
		{"numbers are named together",
			model.JudgeInput{Conditions: []string{"open on weekdays 8 to 6"}, Reply: agentTurn("Open on weekdays nine to five.")},
			domain.ConditionFailure, "lacks the numbers 8, 6", "The numbers 8, 6 it states are not in the reply"},
		{"the words are named in the summary",
			model.JudgeInput{Conditions: []string{"offers a discount voucher"}, Reply: agentTurn("No.")},
			domain.ConditionFailure, `("offers a discount voucher"): missing discount, voucher.`, "0 of 2"},
		{"a refusal fails: the configuration does not cover the question",
			model.JudgeInput{Conditions: []string{"sells gift cards"}, Transcript: asked, Reply: refusal},
			domain.ConditionFailure, `the agent's configuration does not cover the question "Do you sell gift cards?"`, `Condition "sells gift cards": not met`},
		{"a refusal fails whatever the examples",
			model.JudgeInput{SuccessExamples: []string{"Yes, we sell gift cards."}, FailureExamples: []string{"I'm sorry, I can't find that."}, Transcript: asked, Reply: refusal},
			domain.ConditionFailure, "does not cover the question", "looked for: sell, gift, cards"},
		{"a refusal a success example asks for is judged by the examples",
			model.JudgeInput{SuccessExamples: []string{"I'm sorry, I can't find anything about that."}, FailureExamples: []string{"Yes, we sell gift cards."}, Transcript: asked, Reply: refusal},
			domain.ConditionSuccess, "closer to success example #1", ""},
		{"examples compare normalised words",
			model.JudgeInput{SuccessExamples: []string{"Refunds are POSSIBLE within thirty days."}, FailureExamples: []string{"No refund."}, Reply: agentTurn("refund are possible within 30 day")},
			domain.ConditionSuccess, "success example #1 (1.00)", ""},
		{"a refusal an example of not knowing asks for is judged by the examples",
			model.JudgeInput{SuccessExamples: []string{"I do not know."}, FailureExamples: []string{"Yes, we sell gift cards."}, Transcript: asked, Reply: refusal},
			domain.ConditionSuccess, "closer to success example #1", ""},
		{"a condition without content words cannot be checked",
			model.JudgeInput{Conditions: []string{"The agent responds."}, Reply: agentTurn("Anything.")},
			domain.ConditionUnknown, `cannot check the success condition "The agent responds."`, "no content words to look for"},
		{"a condition that fails outweighs one that cannot be checked",
			model.JudgeInput{Conditions: []string{"The agent responds.", "offers a discount voucher"}, Reply: agentTurn("No.")},
			domain.ConditionFailure, `("offers a discount voucher")`, ""},
		{"a lone success example too little alike, and no condition: the summary says what was compared",
			model.JudgeInput{SuccessExamples: []string{"We sell gift vouchers in store."}, Reply: agentTurn("Refunds are possible within 30 days.")},
			domain.ConditionUnknown, "not alike enough to any success example to be judged by them (closest #1, word-set similarity 0.00; 0.50 decides)", ""},
		{"a hello meets greets",
			model.JudgeInput{Conditions: []string{"greets the caller"}, Reply: agentTurn("Hello, Acme here.")}, domain.ConditionSuccess, "", "found: greets"},
	})
}

// FuzzOffline: any prompt, message and condition give an answer and a
// verdict without a panic, the same twice.
func FuzzOffline(f *testing.F) {
	f.Add("# Refund policy\n- Refunds within 30 days.\nQ: Deliver?\nA: Yes.", "Can I get a refund?", "refund 30 days")
	f.Add("Mr. J. e.g. 1,000 9:00 a) b) 1. - * ", "can't 1,00 9am ȺȺ’s", "")
	f.Add("Opening hours:\n\n:\n#\n?\n", "?", "declines")
	f.Fuzz(func(t *testing.T, prompt, msg, cond string) {
		conv := model.Conversation{SystemPrompt: prompt, Tools: []model.Tool{bookTable}, Turns: []model.Turn{agentTurn(prompt), userTurn(msg)}}
		in := model.JudgeInput{Conditions: []string{cond}, SuccessExamples: []string{msg}, Transcript: conv.Turns}
		var first model.Verdict
		var firstT model.Turn
		for i := range 2 {
			turn, _, err := Model{}.Respond(context.Background(), conv)
			if err != nil {
				t.Fatal(err)
			}
			in.Reply = turn
			v, _, err := Model{}.Judge(context.Background(), in)
			if err != nil || v.Summary == "" {
				t.Fatalf("verdict %+v, %v", v, err)
			}
			if i == 0 {
				first, firstT = v, turn
			} else if !reflect.DeepEqual(v, first) || !reflect.DeepEqual(turn, firstT) {
				t.Fatalf("not deterministic: %+v %+v / %+v %+v", firstT, first, turn, v)
			}
		}
	})
}
