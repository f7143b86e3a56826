package ports

import (
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/wire"
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
func LoadTestView(inv *testingv1.Invocation) wire.LoadTest {
	l := inv.GetLoad()
	budget := app.LoadBudget(l)
	v := wire.LoadTest{
		ID: inv.GetInvocationId(), AgentID: inv.GetAgentId(), TestID: l.GetTest().GetTestId(), TestName: l.GetTest().GetTestName(),
		Status: inv.GetStatus(), CreatedAtUnixSecs: inv.GetCreatedAtUnix(), TurnsPerCaller: int(max(l.GetTurnsPerCaller(), 1)),
		Steps: make([]wire.LoadStep, len(l.GetSteps())),
	}
	v.LatencyBudget = (*wire.LatencyBudget)(budget) // the same fields: nil stays null
	if inv.GetStatus() == domain.InvocationRunning {
		v.CurrentStep = new(int(l.GetCurrentStep()))
	}
	for i, callers := range l.GetSteps() {
		st := wire.LoadStep{Step: i, Callers: int(callers), Failures: []wire.LoadFailure{}, BudgetBreaches: []wire.BudgetBreach{}}
		switch {
		case i < len(l.GetResults()):
			res := l.GetResults()[i]
			st.Status = "completed"
			if inv.GetStatus() == domain.InvocationCancelled && i == int(l.GetCurrentStep()) {
				st.Status = "cancelled" // stopped running: its figures are over the callers that played
			}
			st.Turns, st.FailedTurns = res.GetTurns(), res.GetFailedTurns()
			if p := int(res.GetPeakCallers()); p > 0 {
				st.PeakCallers = &p
			}
			if res.GetTurns() > 0 {
				st.FailedShare = float64(res.GetFailedTurns()) / float64(res.GetTurns())
			}
			for _, f := range res.GetFailures() {
				st.Failures = append(st.Failures, wire.LoadFailure{Reason: f.GetReason(), Count: f.GetCount()})
			}
			if res.GetTurns() > res.GetFailedTurns() {
				st.FirstTokenMs = &wire.Percentiles{P50: res.GetFirstTokenP50Ms(), P95: res.GetFirstTokenP95Ms(), Max: res.GetFirstTokenMaxMs()}
				st.TurnMs = &wire.Percentiles{P50: res.GetTurnP50Ms(), P95: res.GetTurnP95Ms(), Max: res.GetTurnMaxMs()}
				st.OverheadUs = &wire.Overhead{P50: res.GetOverheadP50Us(), P95: res.GetOverheadP95Us()}
				step := domain.LoadStep{FirstTokenP95Ms: res.GetFirstTokenP95Ms(), TurnP95Ms: res.GetTurnP95Ms()}
				for _, b := range step.BudgetBreaches(budget) {
					st.BudgetBreaches = append(st.BudgetBreaches, wire.BudgetBreach(b))
				}
			}
			st.MetBudget = new(res.GetMetBudget())
			st.StartedAtUnixMs, st.FinishedAtUnixMs = new(res.GetStartedAtUnixMs()), new(res.GetFinishedAtUnixMs())
			if v.BrokeBudgetAtStep == nil && !res.GetMetBudget() {
				v.BrokeBudgetAtStep, v.BrokeBudgetAtCallers = new(i), new(int(callers))
			}
		case inv.GetStatus() == domain.InvocationCancelled:
			st.Status = "cancelled"
			if i == int(l.GetCurrentStep()) { // it was running: its calls were made
				st.StartedAtUnixMs = new(l.GetStepStartedAtUnixMs())
			}
		case i == int(l.GetCurrentStep()):
			st.Status = "running"
			st.StartedAtUnixMs = new(l.GetStepStartedAtUnixMs())
		default:
			st.Status = "pending"
		}
		v.Steps[i] = st
	}
	return v
}
