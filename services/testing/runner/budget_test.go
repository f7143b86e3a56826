package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

// withBudget is hoursTest carrying a latency budget.
func withBudget(budget string) string {
	return strings.TrimSuffix(hoursTest, "}") + `,"latency_budget":` + budget + `}`
}

// An agent that takes 60 ms to answer passes the hours test within a
// budget of 5,000 ms, and fails it over a budget of 20 ms: the judge's
// verdict stays success, the breach is recorded with the measured figure
// and the budget, and the rationale names both.
func TestExecuteHoldsTheRunToItsLatencyBudget(t *testing.T) {
	const took = 60 * time.Millisecond
	slow := &scripted{respond: func(ctx context.Context, c Conversation) (Turn, Usage, error) {
		time.Sleep(took) // the agent's own time: what the budget measures
		return Turn{Role: "agent", Text: "We are open nine to five every weekday."}, Usage{Calls: 1}, nil
	}}
	e := &Executor{Model: slow, Now: time.Now}

	res := e.Execute(context.Background(), newRun(t, domain.TypeLLM, withBudget(`{"first_token_p95_ms":5000,"turn_p95_ms":5000}`)))
	if res.GetStatus() != domain.RunPassed || len(res.GetLatencyBudgetBreaches()) != 0 {
		t.Fatalf("within budget: %s %q %v", res.GetStatus(), res.GetRationaleSummary(), res.GetLatencyBudgetBreaches())
	}

	res = e.Execute(context.Background(), newRun(t, domain.TypeLLM, withBudget(`{"first_token_p95_ms":20}`)))
	b := res.GetLatencyBudgetBreaches()
	if res.GetStatus() != domain.RunFailed || res.GetConditionResult() != domain.ConditionSuccess || res.GetError() != "" || len(b) != 1 {
		t.Fatalf("over budget: %s %s %q %v", res.GetStatus(), res.GetConditionResult(), res.GetRationaleSummary(), b)
	}
	measured := res.GetAgentFirstTokenMs()[0]
	if b[0].GetMetric() != domain.BudgetFirstTokenP95 || b[0].GetBudgetMs() != 20 || b[0].GetMeasuredMs() != measured || measured < took.Milliseconds() {
		t.Fatalf("breach %v, first token %d ms", b[0], measured)
	}
	want := fmt.Sprintf("Time to first token p95 %d ms is over the test's budget of 20 ms.", measured)
	msgs := res.GetRationaleMessages()
	if !strings.HasPrefix(res.GetRationaleSummary(), want+" ") || len(msgs) < 2 || msgs[len(msgs)-1] != want {
		t.Fatalf("rationale %q %q, want it to say %q", res.GetRationaleSummary(), msgs, want)
	}
}

// A simulation is held to its budget over every agent turn it played:
// one slow turn among a few is its p95 (nearest rank), and fails it.
func TestExecuteHoldsASimulationToItsBudgetOverEveryTurn(t *testing.T) {
	const slowTurn = 80 * time.Millisecond
	calls := 0
	agent := &scripted{respond: func(ctx context.Context, c Conversation) (Turn, Usage, error) {
		if calls++; calls == 2 { // one turn of the conversation, the second
			time.Sleep(slowTurn)
		}
		return offline.Model{}.Respond(ctx, c)
	}}
	res := (&Executor{Model: agent, Now: time.Now}).Execute(context.Background(),
		newRun(t, domain.TypeSimulation, simTest(","+bookedMock+`,"latency_budget":{"first_token_p95_ms":40}`)))
	first := res.GetAgentFirstTokenMs()
	b := res.GetLatencyBudgetBreaches()
	if res.GetConditionResult() != domain.ConditionSuccess || res.GetStatus() != domain.RunFailed || len(first) < 3 || len(b) != 1 {
		t.Fatalf("%s %s, first tokens %v, breaches %v: %q", res.GetStatus(), res.GetConditionResult(), first, b, res.GetRationaleSummary())
	}
	p95, _ := domain.NearestRankPercentile(first, 0.95)
	if b[0].GetMeasuredMs() != p95 || p95 < slowTurn.Milliseconds() || b[0].GetBudgetMs() != 40 {
		t.Fatalf("breach %v, first tokens %v", b[0], first)
	}
}
