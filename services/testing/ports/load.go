package ports

import (
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

func (h *Handlers) StartLoadTest(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.StartLoadTest, LoadTestView)
}

func (h *Handlers) GetLoadTest(c *api.Call) (any, error) {
	inv, err := h.App.LoadTest(c.Context(), c.Caller().WorkspaceID, c.ID())
	return api.View(inv, err, LoadTestView)
}

// LoadTestView is a load test in its wire shape (schema LoadTest).
func LoadTestView(inv *testingv1.Invocation) map[string]any {
	l := inv.GetLoad()
	budget := app.LoadBudget(l)
	var budgetView any
	if budget != nil {
		budgetView = map[string]any{"first_token_p95_ms": budget.FirstTokenP95Ms, "turn_p95_ms": budget.TurnP95Ms}
	}
	testID, testName := l.GetTest().GetTestId(), l.GetTest().GetTestName()
	steps := make([]map[string]any, len(l.GetSteps()))
	var broke, brokeCallers any
	for i, callers := range l.GetSteps() {
		st := map[string]any{"step": i, "callers": callers, "turns": 0, "failed_turns": 0, "failed_share": 0.0,
			"failures": []any{}, "first_token_ms": nil, "turn_ms": nil, "overhead_us": nil, "met_budget": nil,
			"started_at_unix_ms": nil, "finished_at_unix_ms": nil}
		switch {
		case i < len(l.GetResults()):
			res := l.GetResults()[i]
			st["status"] = "completed"
			st["turns"], st["failed_turns"] = res.GetTurns(), res.GetFailedTurns()
			if res.GetTurns() > 0 {
				st["failed_share"] = float64(res.GetFailedTurns()) / float64(res.GetTurns())
			}
			failures := make([]any, len(res.GetFailures()))
			for j, f := range res.GetFailures() {
				failures[j] = map[string]any{"reason": f.GetReason(), "count": f.GetCount()}
			}
			st["failures"] = failures
			if res.GetTurns() > res.GetFailedTurns() {
				st["first_token_ms"] = map[string]any{"p50": res.GetFirstTokenP50Ms(), "p95": res.GetFirstTokenP95Ms(), "max": res.GetFirstTokenMaxMs()}
				st["turn_ms"] = map[string]any{"p50": res.GetTurnP50Ms(), "p95": res.GetTurnP95Ms(), "max": res.GetTurnMaxMs()}
				st["overhead_us"] = map[string]any{"p50": res.GetOverheadP50Us(), "p95": res.GetOverheadP95Us()}
			}
			st["met_budget"] = res.GetMetBudget()
			step := domain.LoadStep{FirstTokenP95Ms: res.GetFirstTokenP95Ms(), TurnP95Ms: res.GetTurnP95Ms()}
			breaches := []any{}
			if res.GetTurns() > res.GetFailedTurns() {
				for _, b := range step.BudgetBreaches(budget) {
					breaches = append(breaches, map[string]any{"metric": b.Metric, "measured_ms": b.MeasuredMs, "budget_ms": b.BudgetMs})
				}
			}
			st["budget_breaches"] = breaches
			st["started_at_unix_ms"], st["finished_at_unix_ms"] = res.GetStartedAtUnixMs(), res.GetFinishedAtUnixMs()
			if broke == nil && !res.GetMetBudget() {
				broke, brokeCallers = i, callers
			}
		case inv.GetStatus() == domain.InvocationCancelled:
			st["status"] = "cancelled"
		case i == int(l.GetCurrentStep()):
			st["status"] = "running"
			st["started_at_unix_ms"] = l.GetStepStartedAtUnixMs()
		default:
			st["status"] = "pending"
		}
		steps[i] = st
	}
	var current any
	if inv.GetStatus() == domain.InvocationRunning {
		current = l.GetCurrentStep()
	}
	return map[string]any{
		"id": inv.GetInvocationId(), "agent_id": inv.GetAgentId(), "test_id": testID, "test_name": testName,
		"status": inv.GetStatus(), "created_at_unix_secs": inv.GetCreatedAtUnix(), "turns_per_caller": max(l.GetTurnsPerCaller(), 1),
		"latency_budget": budgetView, "current_step": current, "broke_budget_at_step": broke, "broke_budget_at_callers": brokeCallers, "steps": steps,
	}
}
