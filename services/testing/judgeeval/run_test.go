package judgeeval

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// scripted judges by a table of reply → result, and keeps what it was
// asked.
type scripted struct {
	results map[string]string
	asked   chan runner.JudgeInput
}

func (s scripted) Provider() string  { return "scripted" }
func (s scripted) ModelName() string { return "table" }
func (s scripted) Respond(context.Context, runner.Conversation) (runner.Turn, runner.Usage, error) {
	return runner.Turn{}, runner.Usage{}, errors.New("not an agent")
}
func (s scripted) SimulateUser(context.Context, runner.UserInput) (runner.UserTurn, runner.Usage, error) {
	return runner.UserTurn{}, runner.Usage{}, errors.New("not a user")
}
func (s scripted) Judge(_ context.Context, in runner.JudgeInput) (runner.Verdict, runner.Usage, error) {
	if s.asked != nil {
		s.asked <- in
	}
	r := s.results[in.Reply.Text]
	if r == "error" {
		return runner.Verdict{}, runner.Usage{}, errors.New("judge down")
	}
	return runner.Verdict{Result: r, Summary: "scripted " + r}, runner.Usage{}, nil
}

func TestRunScoresEachVerdictAgainstItsLabel(t *testing.T) {
	cases := []Case{
		{ID: "p1", Category: "exact", User: "Hi?", Conditions: []string{"says hi"}, Reply: "hi", Label: Pass},
		{ID: "p2", Category: "exact", Conditions: []string{"says yes", "says now"}, Reply: "yes now", Label: Pass},
		{ID: "f1", Category: "negation", Conditions: []string{"says open"}, Reply: "not open", Label: Fail},
		{ID: "f2", Category: "negation", Conditions: []string{"says free"}, Reply: "not free", Label: Fail},
		{ID: "f3", Category: "negation", Conditions: []string{"says late"}, Reply: "early", Label: Fail},
	}
	judge := scripted{results: map[string]string{
		"hi": "success", "yes now": "unknown", "not open": "success", "not free": "failure", "early": "error",
	}, asked: make(chan runner.JudgeInput, len(cases))}
	r, err := Run(context.Background(), judge, "five", cases, Options{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	close(judge.asked)
	// The first case is asked as the agent's reply after the caller's turn,
	// with its conditions; a case without a user message has no transcript.
	asked := map[string]runner.JudgeInput{}
	for in := range judge.asked {
		asked[in.Reply.Text] = in
	}
	if in := asked["hi"]; in.Reply.Role != "agent" || len(in.Transcript) != 1 || in.Transcript[0].Role != "user" || in.Transcript[0].Text != "Hi?" ||
		len(in.Conditions) != 1 || in.Conditions[0] != "says hi" {
		t.Errorf("first input: %+v", in)
	}
	if in := asked["yes now"]; len(in.Transcript) != 0 || len(in.Conditions) != 2 {
		t.Errorf("second input: %+v", in)
	}

	// p1 agrees; p2 unknown; f1 a false pass; f2 agrees; f3 an error (unknown).
	f := r.Overall
	if f.Cases != 5 || f.Agreement.Count != 2 || f.Unknown != 2 || r.Errors != 1 || f.FalsePass.Count != 1 || f.FalsePass.N != 3 {
		t.Errorf("overall: %+v errors %d", f, r.Errors)
	}
	if len(r.Categories) != 2 || r.Categories[0].Category != "exact" || r.Categories[1].Category != "negation" ||
		r.Categories[0].Agreement.Count != 1 || r.Categories[1].FalsePass.Count != 1 || r.Categories[1].Unknown != 1 {
		t.Errorf("categories: %+v", r.Categories)
	}
	var ids []string
	for _, d := range r.Disagreements() {
		ids = append(ids, d.Case.ID)
	}
	if strings.Join(ids, ",") != "p2,f1,f3" {
		t.Errorf("disagreements %v, want p2,f1,f3 in the set's order", ids)
	}
	if r.Judge != "scripted/table" || r.P95 < r.P50 || r.P50 <= 0 {
		t.Errorf("judge %q, p50 %s, p95 %s", r.Judge, r.P50, r.P95)
	}

	var out bytes.Buffer
	r.Write(&out, Bar)
	r.WriteDisagreements(&out)
	for _, want := range []string{"agreement    0.400", "NOT MET", "unknown      2 (judge errors 1)", "f3", "error: judge down", "negation"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []Case{{ID: "a", Category: "exact", Conditions: []string{"c"}, Reply: "r", Label: Pass}, {ID: "b", Category: "exact", Conditions: []string{"c"}, Reply: "r", Label: Fail}}
	if _, err := Run(ctx, scripted{}, "x", cases, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}
