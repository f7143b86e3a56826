package ports

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// judgesOf are the judge models a runner can re-judge with, by name: the
// platform's judge (VOICEAI_JUDGE_*) and the offline judge, which needs
// nothing.
func judgesOf(exec *runner.Executor) map[string]runner.Model {
	out := map[string]runner.Model{offline.Model{}.ModelName(): offline.Model{}, offline.Lexical{}.ModelName(): offline.Lexical{}}
	if exec != nil && exec.Model != nil {
		out[exec.Model.ModelName()] = exec.Model
	}
	return out
}

// rejudgeParallel bounds the runs a request judges at once.
const rejudgeParallel = 8

// Rejudge judges the labelled runs the filter selects again with another
// judge model, and stores each vote (testing.run_rejudged): no run's own
// verdict changes. A retry with the same Idempotency-Key answers the
// votes the first request stored, judging only the runs it left.
func (s *Simulator) Rejudge(c *api.Call) (any, error) {
	caller := c.Caller()
	in := app.RejudgeInput{Limit: 50}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	m, ok := s.judges[in.JudgeModel]
	if !ok {
		names := make([]string, 0, len(s.judges))
		for n := range s.judges {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, apperr.ValidationErrors{{Loc: []any{"body", "judge_model"}, Type: "value_error",
			Msg: "No judge model " + in.JudgeModel + " here: the runners judge with " + strings.Join(names, ", ")}}
	}
	rejudgeID := app.RejudgeIDOf(caller.CommandID)
	var prior map[string]*testingv1.RejudgeVote
	if caller.CommandID != "" {
		var err error
		if prior, err = s.app.RejudgeVotesByCommand(c.Context(), caller.WorkspaceID, caller.CommandID); err != nil {
			return nil, err
		}
	}
	targets, err := s.app.RejudgeTargets(c.Context(), caller.WorkspaceID, in.Filter, in.Limit)
	if err != nil {
		return nil, err
	}
	// A retry answers the votes the first request stored and judges only
	// the runs it left (a copy sent while the first is still judging
	// completes the set; each vote is stored once, by its message id).
	votes := make([]*testingv1.RejudgeVote, len(targets))
	g, ctx := errgroup.WithContext(c.Context())
	g.SetLimit(rejudgeParallel)
	for i, t := range targets {
		if v, ok := prior[t.Label.GetRunId()]; ok && v.GetJudgeModel() == m.ModelName() {
			votes[i] = v
			continue
		}
		g.Go(func() error {
			var responses []domain.Message
			_ = json.Unmarshal(t.Result.GetAgentResponsesJson(), &responses)
			run := runner.Run{Invocation: t.Invocation, Test: t.Test, Definition: t.Definition, AgentConfig: t.Invocation.GetAgentConfigJson(),
				BranchID: t.Invocation.GetBranchId(), RunID: t.Label.GetRunId(), Attempt: t.Result.GetAttempt()}
			verdict, _, err := s.exec.Rejudge(ctx, m, run, responses)
			v := &testingv1.RejudgeVote{
				RejudgeId: rejudgeID, WorkspaceId: caller.WorkspaceID, InvocationId: t.Label.GetInvocationId(), RunId: t.Label.GetRunId(),
				TestId: t.Label.GetTestId(), TestName: t.Label.GetTestName(), Attempt: t.Label.GetAttempt(), ResultSeq: t.Label.GetResultSeq(),
				JudgeProvider: m.Provider(), JudgeModel: m.ModelName(), Result: verdict.Result, Rationale: verdict.Summary,
				RequestedByUserId: caller.UserID, JudgedAtUnixMs: s.app.Now().UnixMilli(),
			}
			if err != nil {
				v.Result, v.Error = domain.ConditionUnknown, err.Error()
			}
			votes[i] = v
			return s.app.RecordRejudge(ctx, caller, v)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rejudgeView(rejudgeID, m.Provider(), m.ModelName(), votes), nil
}

func rejudgeView(id, provider, model string, votes []*testingv1.RejudgeVote) map[string]any {
	sort.SliceStable(votes, func(i, j int) bool {
		if votes[i].GetInvocationId() != votes[j].GetInvocationId() {
			return votes[i].GetInvocationId() < votes[j].GetInvocationId()
		}
		a, _ := domain.RunIndex(votes[i].GetInvocationId(), votes[i].GetRunId())
		b, _ := domain.RunIndex(votes[j].GetInvocationId(), votes[j].GetRunId())
		return a < b
	})
	out := map[string]any{"rejudge_id": id, "judge_provider": provider, "judge_model": model, "runs": len(votes)}
	list := make([]map[string]any, len(votes))
	for i, v := range votes {
		list[i] = map[string]any{"invocation_id": v.GetInvocationId(), "run_id": v.GetRunId(), "test_id": v.GetTestId(),
			"test_name": v.GetTestName(), "attempt": v.GetAttempt(), "result": v.GetResult(), "rationale": v.GetRationale()}
		if e := v.GetError(); e != "" {
			list[i]["error"] = e
		}
	}
	out["votes"] = list
	return out
}
