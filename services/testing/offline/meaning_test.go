package offline

import (
	"context"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/model"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// TestOfflineJudgeReadsMeaning: the default judge decides by meaning
// (the rules themselves are tested in package meaning): examples by
// their meaning, every condition decided, the first that fails or
// cannot be decided named in the summary.
func TestOfflineJudgeReadsMeaning(t *testing.T) {
	asked := []model.Turn{userTurn("Do you sell gift cards?")}
	checkVerdicts(t, Model{}.Judge, []judgeCase{
		{"a paraphrase meets the condition",
			model.JudgeInput{Conditions: []string{"The agent says the parcel was delivered"}, Reply: agentTurn("Your package was delivered this morning.")},
			domain.ConditionSuccess, "meets every success condition", `Condition "The agent says the parcel was delivered": met`},
		{"a negation of the condition's words fails",
			model.JudgeInput{Conditions: []string{"The agent says a refund is possible within 30 days with a receipt"}, Reply: agentTurn("Refunds are possible within 30 days, and you do not need a receipt.")},
			domain.ConditionFailure, `contradicts the condition: "receipt" (reply: not "receipt")`, ""},
		{"another number fails",
			model.JudgeInput{Conditions: []string{"refunds within 60 days with a receipt"}, Reply: agentTurn("Refunds within 30 days with a receipt.")},
			domain.ConditionFailure, `"60 days" (reply: "30 days")`, ""},
		{"the same amount in other units passes",
			model.JudgeInput{Conditions: []string{"The agent says returns are accepted within 30 days"}, Reply: agentTurn("You can return it within a month.")},
			domain.ConditionSuccess, "", "met"},
		{"a number of another subject is no contradiction: the condition is missing",
			model.JudgeInput{Conditions: []string{"refunds are possible within 30 days", "The agent says delivery takes three days"}, Reply: agentTurn("Refunds are possible within 30 days.")},
			domain.ConditionFailure, `does not meet the success condition "The agent says delivery takes three days": the reply does not say most of it (found nothing; missing delivery, three days)`,
			`Condition "refunds are possible within 30 days": met`},
		{"every condition must hold",
			model.JudgeInput{Conditions: []string{"The agent says the store opens at 9", "The agent explains the refund policy"}, Reply: agentTurn("We open at 9.")},
			domain.ConditionFailure, `"The agent explains the refund policy"`, `Condition "The agent says the store opens at 9": met`},
		{"what cannot be decided is unknown, saying what was found and missed",
			model.JudgeInput{Conditions: []string{"The agent says a refund is possible within 30 days with a receipt"}, Reply: agentTurn("Yes, you can get a refund within 30 days.")},
			domain.ConditionUnknown, "cannot decide", "missing receipt"},
		{"a refusal fails: the configuration does not cover the question",
			model.JudgeInput{Conditions: []string{"sells gift cards"}, Transcript: asked, Reply: agentTurn(Refusal)},
			domain.ConditionFailure, `the agent's configuration does not cover the question "Do you sell gift cards?"`, ""},
		{"a refusal a condition asks for passes",
			model.JudgeInput{Conditions: []string{"The agent declines: gift cards are not in its instructions"}, Transcript: asked, Reply: agentTurn(Refusal)},
			domain.ConditionSuccess, "", "declines"},
		{"examples decide by meaning",
			model.JudgeInput{SuccessExamples: []string{"Your parcel is on its way."}, FailureExamples: []string{"I do not know."}, Reply: agentTurn("The package is on its way.")},
			domain.ConditionSuccess, "closer in meaning to success example #1", "Closest success example #1, similarity in meaning"},
		{"a refusal an example of not knowing asks for is judged by the examples",
			model.JudgeInput{SuccessExamples: []string{"I do not know."}, FailureExamples: []string{"Yes, we sell gift cards."}, Transcript: asked, Reply: agentTurn(Refusal)},
			domain.ConditionSuccess, "closer in meaning to success example #1", ""},
		{"tool calls count as what the reply says",
			model.JudgeInput{Conditions: []string{"books a table for 4 guests"}, Reply: model.Turn{Role: "agent", Calls: []model.Call{{Name: "book_table", Arguments: `{"guests":4}`}}}},
			domain.ConditionSuccess, "", "met"},
		{"a condition naming nothing cannot be checked, and says what would do",
			model.JudgeInput{Conditions: []string{"The agent answers correctly."}, Transcript: []model.Turn{userTurn("Do you sell pet food?")},
				Reply: agentTurn("Our opening hours are nine to five every weekday.")},
			domain.ConditionUnknown, `cannot check the success condition "The agent answers correctly.": it names nothing a reply could say or lack`,
			`Condition "The agent answers correctly.": unknown: the offline judge cannot check this condition`},
		{"the advice names a concrete condition, examples and a model judge",
			model.JudgeInput{Conditions: []string{"None."}, Reply: agentTurn("Our opening hours are nine to five every weekday.")},
			domain.ConditionUnknown, "add success examples, or judge with a model (VOICEAI_JUDGE_PROVIDER=openai)", ""},
		{"one condition met and one naming nothing is unknown",
			model.JudgeInput{Conditions: []string{"The agent states the opening hours", "The agent responds."}, Reply: agentTurn("Our opening hours are nine to five every weekday.")},
			domain.ConditionUnknown, `cannot check the success condition "The agent responds."`, `Condition "The agent states the opening hours": met`},
		{"a lone success example too little alike, and no condition: the summary says what was compared",
			model.JudgeInput{SuccessExamples: []string{"We sell gift vouchers in store."}, Reply: agentTurn("Refunds are possible within 30 days.")},
			domain.ConditionUnknown, "the reply is not alike enough to any success example to be judged by them (closest #1, similarity in meaning 0.00; 0.50 decides), and the test has no success condition to decide by.",
			"Closest success example #1"},
		{"a blank example compares with nothing",
			model.JudgeInput{SuccessExamples: []string{"  "}, Reply: agentTurn("Refunds are possible within 30 days.")},
			domain.ConditionUnknown, "not alike enough to any success example to be judged by them (closest #1, similarity in meaning 0.00", ""},
		{"a lone failure example too little alike",
			model.JudgeInput{FailureExamples: []string{"We sell gift vouchers in store."}, Reply: agentTurn("Refunds are possible within 30 days.")},
			domain.ConditionUnknown, "not alike enough to any failure example to be judged by them (closest #1", ""},
		{"examples that tie, and no condition",
			model.JudgeInput{SuccessExamples: []string{"We open at nine."}, FailureExamples: []string{"We open at nine."}, Reply: agentTurn("We open at nine.")},
			domain.ConditionUnknown, "the reply is as close to success example #1 as to failure example #1 (similarity in meaning 1.00): the examples do not decide it", ""},
		{"nothing to decide by is unknown",
			model.JudgeInput{Reply: agentTurn("anything")},
			domain.ConditionUnknown, "no examples or condition to decide by", ""},
		// The README's "Opening hours" test: a condition and examples.
		// The condition decides; a reply that breaks it does not pass for
		// being closer to the success example than to the failure one.
		{"a condition broken fails whatever the examples say",
			model.JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, SuccessExamples: []string{"We are open nine to five every weekday."},
				FailureExamples: []string{"I do not know."}, Reply: agentTurn("We are open ten to six every weekday.")},
			domain.ConditionFailure, `does not meet the success condition "The agent states the opening hours nine to five"`, "Closest success example #1"},
		{"a condition met passes",
			model.JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, SuccessExamples: []string{"We are open nine to five every weekday."},
				FailureExamples: []string{"I do not know."}, Reply: agentTurn("Our opening hours are nine to five on weekdays.")},
			domain.ConditionSuccess, "meets every success condition", ""},
		{"what a condition leaves open, the examples decide",
			model.JudgeInput{Conditions: []string{"The agent answers correctly."}, SuccessExamples: []string{"Your parcel is on its way."},
				FailureExamples: []string{"I do not know."}, Reply: agentTurn("The package is on its way.")},
			domain.ConditionSuccess, "closer in meaning to success example #1", `Condition "The agent answers correctly.": unknown`},
	})
}

// judgeCase is a judge's input and what its verdict must say.
type judgeCase struct {
	name        string
	in          model.JudgeInput
	result      string
	summaryHas  string
	messagesHas string
}

// checkVerdicts judges each case with judge: the verdict has the case's
// result, its summary and messages the case's words, and it took one
// call.
func checkVerdicts(t *testing.T, judge func(context.Context, model.JudgeInput) (model.Verdict, model.Usage, error), cases []judgeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, u, err := judge(context.Background(), c.in)
			if err != nil {
				t.Fatal(err)
			}
			if v.Result != c.result || !strings.Contains(v.Summary, c.summaryHas) || !strings.Contains(strings.Join(v.Messages, "\n"), c.messagesHas) {
				t.Fatalf("verdict %+v\nwant %s, summary with %q, messages with %q", v, c.result, c.summaryHas, c.messagesHas)
			}
			if u != (model.Usage{Calls: 1}) {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}

// The issue's own case: asked "Can I return the jacket I bought last
// week?", an agent whose prompt says "Refunds are possible within 30
// days" answers with that sentence (return and refund share a WordNet
// synset), and the offline judge passes it.
func TestOfflineAgentAnswersByMeaning(t *testing.T) {
	conv := model.Conversation{
		SystemPrompt: "You are the support agent of a clothes shop. Our store is open nine to five. Refunds are possible within 30 days.",
		Turns:        []model.Turn{userTurn("Can I return the jacket I bought last week?")},
	}
	turn, _, err := Model{}.Respond(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "Refunds are possible within 30 days." {
		t.Fatalf("reply %q, want the refund sentence", turn.Text)
	}
	v, _, err := Model{}.Judge(context.Background(), model.JudgeInput{
		Conditions: []string{"The agent says a refund is possible within 30 days"}, Transcript: conv.Turns, Reply: turn,
	})
	if err != nil || v.Result != domain.ConditionSuccess {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	// The first judge read shared words only: it found none of "return"
	// in the answer, and its agent did not find the sentence at all.
	lex, _, _ := Lexical{}.Judge(context.Background(), model.JudgeInput{Conditions: []string{"The agent says the jacket can be returned"}, Transcript: conv.Turns, Reply: turn})
	if lex.Result == domain.ConditionSuccess {
		t.Fatalf("the lexical judge passed a paraphrase it cannot read: %+v", lex)
	}
}
