package app

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// LoadTestInput is the body of POST /v1/convai/agents/{id}/load-tests.
// Its shape (a test id, 1 to 10 steps each at least 1, turns_per_caller
// 1..20) is the API schema's (LoadTestCreate), checked at the edge; the
// operator's bound on a step's callers is checked here.
type LoadTestInput struct {
	TestID         string `json:"test_id"`
	Steps          []int  `json:"steps"`
	TurnsPerCaller *int   `json:"turns_per_caller,omitempty"`
}

// MaxLoadCallers is the operator's bound on one step's callers.
func (a *App) MaxLoadCallers() int {
	if a.Limits.MaxLoadCallers > 0 {
		return a.Limits.MaxLoadCallers
	}
	return domain.LoadDefaultMaxCallers
}

// StartLoadTest creates a load test: an invocation of one test whose
// agent turn is played by every step's callers at once, steps one after
// another. It counts as one active invocation of the workspace.
func (a *App) StartLoadTest(ctx context.Context, c principal.Caller, agentID string, in LoadTestInput) (*testingv1.Invocation, error) {
	keyed := keyedID("tinv", "tload", c)
	if inv, ok, err := createdBefore(ctx, a.Invocations, c, keyed); err != nil || ok {
		return inv, err
	}
	var v apperr.Validator
	v.Check(len(in.Steps) > 0, "List should have at least 1 item", "too_short", "body", "steps")
	v.Check(len(in.Steps) <= domain.LoadMaxSteps, fmt.Sprintf("List should have at most %d items", domain.LoadMaxSteps), "too_long", "body", "steps")
	problems, at := domain.CheckLoadSteps(in.Steps, a.MaxLoadCallers())
	for i, p := range problems {
		v.Add(p, "value_error", "body", "steps", at[i])
	}
	turns := 1
	if in.TurnsPerCaller != nil {
		turns = *in.TurnsPerCaller
	}
	v.Check(turns >= 1 && turns <= domain.LoadMaxTurnsPerCaller,
		fmt.Sprintf("turns_per_caller is 1 to %d", domain.LoadMaxTurnsPerCaller), "value_error", "body", "turns_per_caller")
	if err := v.Err(); err != nil {
		return nil, err
	}
	ag, err := a.Agent(ctx, c.WorkspaceID, agentID)
	if err != nil {
		return nil, err
	}
	entries, err := a.ReadModel.Entries(ctx, c.WorkspaceID, []string{in.TestID})
	if err != nil {
		return nil, err
	}
	d, ok := entries[in.TestID]
	if !ok || d.Kind != KindTest {
		v.Add("Test "+in.TestID+" not found", "value_error", "body", "test_id")
		return nil, v.Err()
	}
	def, err := a.DefinitionAt(ctx, uint64(d.Seq))
	if err != nil {
		return nil, err
	}
	load := &testingv1.LoadTest{TurnsPerCaller: int32(turns), StepStartedAtUnixMs: a.Now().UnixMilli()}
	for _, n := range in.Steps {
		load.Steps = append(load.Steps, int32(n))
	}
	if b := def.LatencyBudget; b != nil {
		if b.FirstTokenP95Ms != nil {
			load.FirstTokenP95BudgetMs = *b.FirstTokenP95Ms
		}
		if b.TurnP95Ms != nil {
			load.TurnP95BudgetMs = *b.TurnP95Ms
		}
	}
	now := a.Now()
	inv := &testingv1.Invocation{
		InvocationId: ids.New("tinv"), WorkspaceId: c.WorkspaceID, AgentId: agentID,
		AgentConfigJson: ag.GetConversationConfigJson(), RepeatCount: 1,
		RanByUserId: c.UserID, RanByUserEmail: c.Email, CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(), Status: domain.InvocationRunning,
		AgentName: ag.GetName(), Title: "Load test: " + d.Name, FolderId: d.ParentFolderID, Load: load,
	}
	load.Test = &testingv1.PlannedTest{TestId: d.ID, TestName: d.Name, TestType: d.Type, TestStreamSeq: uint64(d.Seq)}
	// A load test is one active invocation; its turns are not runs, so it
	// adds nothing to the queued runs.
	return a.createInvocation(ctx, c, keyed, inv, 0)
}

// LoadTest reads a load test; an invocation that is not one is not found.
func (a *App) LoadTest(ctx context.Context, ws, id string) (*testingv1.Invocation, error) {
	inv, _, err := a.Invocations.Get(ctx, ws, id)
	if err != nil || inv.GetLoad() == nil {
		if err == nil || apperr.Is(err, apperr.NotFound) {
			err = apperr.LoadTestNotFound
		}
		return nil, err
	}
	return inv, nil
}

// queueLoadStep queues the jobs of a load test's current step.
func (a *App) queueLoadStep(ctx context.Context, traceparent string, inv *testingv1.Invocation) error {
	load := inv.GetLoad()
	step := int(load.GetCurrentStep())
	if inv.GetStatus() != domain.InvocationRunning || step >= len(load.GetSteps()) {
		return nil
	}
	sizes := domain.LoadJobs(int(load.GetSteps()[step]))
	return a.Jobs.Enqueue(ctx, len(sizes), func(i int) (Message, error) {
		data, _ := proto.Marshal(&testingv1.RunJob{WorkspaceId: inv.GetWorkspaceId(), InvocationId: inv.GetInvocationId(), Kind: domain.JobLoad,
			Attempt: 1, LoadStep: int32(step), LoadJob: int32(i), LoadCallers: int32(sizes[i])})
		subject, err := events.LoadJobSubject(inv.GetWorkspaceId(), inv.GetInvocationId(), step, i)
		if err != nil {
			return Message{}, err
		}
		m := Message{Subject: subject, ID: inv.GetInvocationId() + "#load#" + strconv.Itoa(step) + "#" + strconv.Itoa(i), Data: data}
		if traceparent != "" {
			m.Header = map[string][]string{events.HeaderTraceparent: {traceparent}}
		}
		return m, nil
	})
}

// LoadSamplesMessage is a job's samples as stored on the runs log, once
// per job of a step (a redelivered job's second copy is dropped).
func (a *App) LoadSamplesMessage(ctx context.Context, s *testingv1.LoadSamples) (Message, error) {
	subject, err := events.LoadSamplesSubject(s.GetWorkspaceId(), s.GetInvocationId(), int(s.GetStep()), int(s.GetJob()))
	if err != nil {
		return Message{}, err
	}
	id := s.GetInvocationId() + "#load#" + strconv.Itoa(int(s.GetStep())) + "#" + strconv.Itoa(int(s.GetJob()))
	meta := esproto.Meta(ctx, s.GetWorkspaceId(), id, a.Now())
	e, err := esproto.Encode(ctx, meta, &testingv1.LoadSamplesRecorded{Meta: meta, Samples: s})
	if err != nil {
		return Message{}, err
	}
	return eventMessage(subject, id, e), nil
}

// CheckLoadStep finishes a load test's current step once every one of
// its jobs has stored its samples: it records the step's figures and
// starts the next step, or completes the load test after the last. Safe
// from any number of processes at once (the append is conditional).
//
// A cancel stops the load test with its step running: the jobs runners
// hold finish their calls (the others are purged), and each one's
// samples, as they come, make the step's figures over the callers that
// played (recordCancelledStep).
func (a *App) CheckLoadStep(ctx context.Context, ws, id string) (bool, error) {
	inv, _, err := a.Invocations.Get(ctx, ws, id)
	if err != nil {
		return false, err
	}
	return a.checkLoadStep(ctx, inv)
}

func (a *App) checkLoadStep(ctx context.Context, inv *testingv1.Invocation) (bool, error) {
	load := inv.GetLoad()
	step := int(load.GetCurrentStep())
	cancelled := inv.GetStatus() == domain.InvocationCancelled
	if (inv.GetStatus() != domain.InvocationRunning && !cancelled) || step >= len(load.GetSteps()) {
		return false, nil
	}
	callers := int(load.GetSteps()[step])
	jobs := len(domain.LoadJobs(callers))
	filter, err := events.LoadSamplesOfStep(inv.GetWorkspaceId(), inv.GetInvocationId(), step)
	if err != nil {
		return false, err
	}
	var samples []domain.LoadSample
	err = a.scan(ctx, inv.GetWorkspaceId(), filter, a.Runs.EachLast, func(rec Record) error {
		msg, err := esproto.Decode(rec)
		if err != nil {
			return err
		}
		ev, ok := msg.(*testingv1.LoadSamplesRecorded)
		if !ok {
			return nil
		}
		s := ev.GetSamples()
		ls := domain.LoadSample{Callers: int(s.GetCallers()), FirstTokenUs: s.GetFirstTokenUs(), TurnUs: s.GetTurnUs(), OverheadUs: s.GetOverheadUs(),
			StartedMs: s.GetStartedAtUnixMs(), FinishedMs: s.GetFinishedAtUnixMs(),
			Failures: map[string]int64{}}
		for _, f := range s.GetFailures() {
			ls.Failures[f.GetReason()] += f.GetCount()
		}
		samples = append(samples, ls)
		return nil
	})
	if cancelled {
		return false, a.recordCancelledStep(ctx, inv, step, samples)
	}
	if err != nil || len(samples) < jobs {
		return false, err
	}
	sum := domain.SummarizeLoadStep(callers, jobs, int(max(load.GetTurnsPerCaller(), 1)), samples, LoadBudget(load))
	now := a.Now()
	res := LoadStepProto(sum)
	res.StartedAtUnixMs, res.FinishedAtUnixMs = load.GetStepStartedAtUnixMs(), now.UnixMilli()
	_, err = a.Invocations.Update(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), "", func(inv *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
		l := inv.GetLoad()
		if inv.GetStatus() != domain.InvocationRunning || int(l.GetCurrentStep()) != step {
			return nil, nil // another process finished the step first, or the test was cancelled
		}
		l.Results = append(l.Results, res)
		l.CurrentStep++
		l.StepStartedAtUnixMs = now.UnixMilli()
		if int(l.CurrentStep) < len(l.GetSteps()) {
			return &testingv1.LoadStepCompleted{Meta: meta, Invocation: inv}, nil
		}
		var passed, failed int64
		for _, r := range l.GetResults() {
			if r.GetMetBudget() {
				passed++
			} else {
				failed++
			}
		}
		t := now.Unix()
		inv.Status, inv.CompletedAtUnix, inv.PassedCount, inv.FailedCount = domain.InvocationCompleted, &t, passed, failed
		return &testingv1.InvocationCompleted{Meta: meta, Invocation: inv, PassedCount: passed, FailedCount: failed}, nil
	})
	return err == nil, err
}

// recordCancelledStep records the figures of the step a cancel stopped,
// over the callers whose jobs stored samples (none yet: nothing to
// record). The step stays the load test's current one: the load test
// neither goes on nor completes. Each job finishing later records them
// again, over more callers.
func (a *App) recordCancelledStep(ctx context.Context, inv *testingv1.Invocation, step int, samples []domain.LoadSample) error {
	if len(samples) == 0 {
		return nil
	}
	load := inv.GetLoad()
	played := 0
	for _, s := range samples {
		played += s.Callers
	}
	res := LoadStepProto(domain.SummarizeLoadStep(played, len(samples), int(max(load.GetTurnsPerCaller(), 1)), samples, LoadBudget(load)))
	res.StartedAtUnixMs, res.FinishedAtUnixMs = load.GetStepStartedAtUnixMs(), a.Now().UnixMilli()
	_, err := a.Invocations.Update(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), "", func(inv *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
		l := inv.GetLoad()
		if inv.GetStatus() != domain.InvocationCancelled || int(l.GetCurrentStep()) != step {
			return nil, nil
		}
		switch len(l.GetResults()) {
		case step: // the first job's figures
			l.Results = append(l.Results, res)
		case step + 1: // a later job's: over more callers
			if l.Results[step].GetCallers() >= res.GetCallers() {
				return nil, nil // no more than recorded (a redelivery, or an older read)
			}
			l.Results[step] = res
		default:
			return nil, nil
		}
		return &testingv1.LoadStepCompleted{Meta: meta, Invocation: inv}, nil
	})
	return err
}

// LoadBudget is the latency budget a load test holds its steps to (nil:
// none).
func LoadBudget(l *testingv1.LoadTest) *domain.LatencyBudget {
	var b domain.LatencyBudget
	if v := l.GetFirstTokenP95BudgetMs(); v > 0 {
		b.FirstTokenP95Ms = &v
	}
	if v := l.GetTurnP95BudgetMs(); v > 0 {
		b.TurnP95Ms = &v
	}
	if b.FirstTokenP95Ms == nil && b.TurnP95Ms == nil {
		return nil
	}
	return &b
}

// LoadStepProto is a step's figures as the event carries them.
func LoadStepProto(s domain.LoadStep) *testingv1.LoadStepResult {
	r := &testingv1.LoadStepResult{Callers: int32(s.Callers), Turns: s.Turns, FailedTurns: s.FailedTurns,
		FirstTokenP50Ms: s.FirstTokenP50Ms, FirstTokenP95Ms: s.FirstTokenP95Ms, FirstTokenMaxMs: s.FirstTokenMaxMs,
		TurnP50Ms: s.TurnP50Ms, TurnP95Ms: s.TurnP95Ms, TurnMaxMs: s.TurnMaxMs,
		OverheadP50Us: s.OverheadP50Us, OverheadP95Us: s.OverheadP95Us, MetBudget: s.MetBudget,
		JobsReported: int32(s.JobsReported), Jobs: int32(s.Jobs), PeakCallers: int32(s.PeakCallers)}
	for _, f := range s.Failures {
		r.Failures = append(r.Failures, &testingv1.LoadFailure{Reason: f.Reason, Count: f.Count})
	}
	return r
}
