package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// TestRef is one element of run-tests' tests.
type TestRef struct {
	TestID         string  `json:"test_id"`
	WorkflowNodeID *string `json:"workflow_node_id,omitempty"`
	RootFolderID   *string `json:"root_folder_id,omitempty"`
	RootFolderName *string `json:"root_folder_name,omitempty"`
}

// ConfigOverride is the public agent_config_override: it replaces the
// agent's configuration for the runs.
type ConfigOverride struct {
	ConversationConfig json.RawMessage `json:"conversation_config"`
	PlatformSettings   json.RawMessage `json:"platform_settings"`
	Workflow           json.RawMessage `json:"workflow"`
}

// RunTestsInput is the body of POST /v1/convai/agents/{id}/run-tests.
// Its shape (1 to 5000 tests, each with a test id, repeat_count 1 to 50,
// an override's conversation_config an object) is the API schema's
// (RunTests), checked at the edge.
type RunTestsInput struct {
	Tests               []TestRef       `json:"tests"`
	AgentConfigOverride *ConfigOverride `json:"agent_config_override,omitempty"`
	BranchID            *string         `json:"branch_id,omitempty"`
	RepeatCount         *int            `json:"repeat_count,omitempty"`
	// CacheModelResponses (beyond the public shape) asks runners to answer
	// a model request identical to an earlier one from the shared cache.
	CacheModelResponses *bool `json:"cache_model_responses,omitempty"`
}

// checkOverride checks an override's conversation_config as the agents
// service checks an agent's (the model settings' types and ranges, its
// own endpoint's URL under the outbound rules), so that what no agent
// could be saved with is refused here too rather than failing its runs
// later; and refuses a workflow: runners play the conversation
// configuration, so a workflow would be accepted and not run. Whether
// the workspace secrets it names exist is the runner's to find.
func (a *App) checkOverride(v *apperr.Validator, o *ConfigOverride) {
	if o == nil {
		return
	}
	_, problems := agentconfig.Check(o.ConversationConfig, a.HostAllowed)
	for _, pr := range problems {
		v.Add(pr.Msg, pr.Type, append([]any{"body", "agent_config_override", "conversation_config"}, pr.Loc...)...)
	}
	if w := strings.TrimSpace(string(o.Workflow)); w != "" && w != "null" && w != "{}" {
		v.Add("Workflows are not run by this platform's runners: omit workflow", "value_error", "body", "agent_config_override", "workflow")
	}
}

// checkBinding refuses an override that sends a workspace secret or a
// runner environment variable somewhere the configuration it replaces
// (vetted when it was written) does not, unless the caller is a
// workspace admin: the agents service's rule for agents, applied to
// configurations that are never saved (see agentconfig.Rebinds).
func checkBinding(p principal.Principal, base []byte, o *ConfigOverride) error {
	if o == nil || p.IsAdmin() || !agentconfig.Rebinds(base, o.ConversationConfig) {
		return nil
	}
	return apperr.SecretBindingForbidden
}

// MainBranch is the one branch every agent has.
const MainBranch = "main"

// Agent reads an agent's current state from stream AGENTS.
func (a *App) Agent(ctx context.Context, ws, agentID string) (*agentsv1.Agent, error) {
	ag, _, err := aggregate.AgentReader(a.Agents).Get(ctx, ws, agentID)
	return ag, err
}

// keyedID is the id of the aggregate of prefix a create keyed by c's
// command id makes, stable so that a retry finds it; "" without one.
func keyedID(prefix, namespace string, c principal.Caller) string {
	if c.CommandID == "" {
		return ""
	}
	return prefix + "_" + esproto.StableID(namespace, c.WorkspaceID+"/"+c.CommandID)
}

// createdBefore is the aggregate id a keyed create's first attempt made,
// when it did (aggregate.Repo.Made): a retry answers it before checking
// anything that attempt checked (its agent, test or folder deleted
// since), as it would now fail. An error when the key made it for
// another request.
func createdBefore[S proto.Message](ctx context.Context, r *aggregate.Repo[S], c principal.Caller, id string) (S, bool, error) {
	s, _, ok, err := r.Made(ctx, c.WorkspaceID, id, c.CommandID)
	return s, ok, err
}

// RunTests creates an invocation with every run pending; the enqueuer
// queues its runs.
func (a *App) RunTests(ctx context.Context, c principal.Caller, agentID string, in RunTestsInput) (*testingv1.Invocation, error) {
	keyed := keyedID("tinv", "tinv", c)
	if inv, ok, err := createdBefore(ctx, a.Invocations, c, keyed); err != nil || ok {
		return inv, err
	}
	var v apperr.Validator
	// An invocation plans at least one test (the schema's minItems; said
	// here too, as the title and folder below are the first test's).
	v.Check(len(in.Tests) > 0, "List should have at least 1 item", "too_short", "body", "tests")
	repeat := 1
	if in.RepeatCount != nil {
		repeat = *in.RepeatCount
	}
	checkBranch(&v, in.BranchID)
	a.checkOverride(&v, in.AgentConfigOverride)
	tests := in.Tests
	if err := v.Err(); err != nil {
		return nil, err
	}
	ag, err := a.Agent(ctx, c.WorkspaceID, agentID)
	if err != nil {
		return nil, err
	}
	if err := checkBinding(c.Principal, ag.GetConversationConfigJson(), in.AgentConfigOverride); err != nil {
		return nil, err
	}
	wanted := make([]string, len(tests))
	for i, t := range tests {
		wanted[i] = t.TestID
	}
	entries, err := a.ReadModel.Entries(ctx, c.WorkspaceID, wanted)
	if err != nil {
		return nil, err
	}
	now := a.Now()
	inv := &testingv1.Invocation{
		InvocationId: ids.New("tinv"), WorkspaceId: c.WorkspaceID, AgentId: agentID, BranchId: deref(in.BranchID),
		AgentConfigJson: ag.GetConversationConfigJson(), RepeatCount: int32(repeat),
		RanByUserId: c.UserID, RanByUserEmail: c.Email, CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(), Status: domain.InvocationRunning,
		AgentName: ag.GetName(), CacheModelResponses: in.CacheModelResponses != nil && *in.CacheModelResponses,
	}
	if in.AgentConfigOverride != nil {
		inv.AgentConfigJson, inv.ConfigOverridden = in.AgentConfigOverride.ConversationConfig, true
	}
	for i, t := range tests {
		d, ok := entries[t.TestID]
		if !ok || d.Kind != KindTest {
			v.Add("Test "+t.TestID+" not found", "value_error", "body", "tests", i, "test_id")
			continue
		}
		inv.Tests = append(inv.Tests, &testingv1.PlannedTest{
			TestId: d.ID, TestName: d.Name, TestType: d.Type, TestStreamSeq: uint64(d.Seq),
			WorkflowNodeId: deref(t.WorkflowNodeID), RootFolderId: deref(t.RootFolderID), RootFolderName: deref(t.RootFolderName),
		})
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	inv.JobsTotal = int64(len(inv.Tests)) * int64(repeat)
	inv.FolderId = inv.Tests[0].GetRootFolderId()
	switch {
	case inv.Tests[0].GetRootFolderName() != "":
		inv.Title = inv.Tests[0].GetRootFolderName()
	case len(inv.Tests) == 1:
		inv.Title = inv.Tests[0].GetTestName()
	default:
		inv.Title = fmt.Sprintf("%d tests", len(inv.Tests))
	}
	if repeat > 1 {
		inv.BucketingStatus = domain.BucketingPending
	}
	// Every copy of a test id is a run, times repeat_count.
	return a.createInvocation(ctx, c, keyed, inv, inv.JobsTotal)
}

// createInvocation stores a new invocation that queues runs more runs,
// under keyed (its Idempotency-Key's id) when there is one, once the
// workspace's quotas allow them.
func (a *App) createInvocation(ctx context.Context, c principal.Caller, keyed string, inv *testingv1.Invocation, runs int64) (*testingv1.Invocation, error) {
	replay := false
	if keyed != "" {
		inv.InvocationId = keyed
		_, _, err := a.Invocations.Get(ctx, c.WorkspaceID, inv.InvocationId)
		replay = err == nil // a first attempt made it meanwhile: answered as it, whatever the quotas say now
	}
	if !replay {
		if err := a.checkQuotas(ctx, c.WorkspaceID, runs); err != nil {
			return nil, err
		}
	}
	meta := esproto.Meta(ctx, c.WorkspaceID, c.CommandID, a.Now())
	out, _, err := a.Invocations.Create(ctx, c.WorkspaceID, inv.InvocationId, meta, &testingv1.InvocationCreated{Meta: meta, Invocation: inv}, inv)
	return out, err
}

// Cancel stops the runs of an invocation that have not started: their
// queued jobs are purged, and runners skip jobs of a cancelled invocation
// (or of its cancelled round, once resubmitted: see RunsRound).
func (a *App) Cancel(ctx context.Context, c principal.Caller, invocationID string) (*testingv1.Invocation, error) {
	inv, err := a.Invocations.Update(ctx, c.WorkspaceID, invocationID, c.CommandID, func(inv *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
		switch inv.Status {
		case domain.InvocationCancelled:
			return nil, nil
		case domain.InvocationCompleted:
			return nil, apperr.InvocationFinished
		}
		now := a.Now().Unix()
		inv.Status, inv.CancelledAtUnix = domain.InvocationCancelled, &now
		if inv.BucketingStatus == domain.BucketingPending {
			inv.BucketingStatus, inv.BucketingError = domain.BucketingFailed, "The invocation was cancelled before all runs finished."
		}
		return &testingv1.InvocationCancelled{Meta: meta, Invocation: inv}, nil
	})
	if err != nil {
		return nil, err
	}
	jobs, err := events.TestJobsOfInvocation(c.WorkspaceID, invocationID)
	if err != nil {
		return inv, err
	}
	return inv, a.Jobs.Purge(ctx, jobs)
}

// checkBranch refuses a branch other than main: an agent here has one
// configuration, its main branch, and another branch would silently run
// that configuration under its name. (Omitted or empty is main.)
func checkBranch(v *apperr.Validator, branchID *string) {
	if branchID != nil && *branchID != "" {
		v.Check(*branchID == MainBranch, "Agent has no branch "+strconv.Quote(*branchID)+": agents have one configuration, branch \"main\"",
			"value_error", "body", "branch_id")
	}
}

// ResubmitInput is the body of POST …/{id}/resubmit. Its shape (1 or
// more run ids, the agent's id) is the API schema's (Resubmit).
type ResubmitInput struct {
	TestRunIDs          []string        `json:"test_run_ids"`
	AgentID             string          `json:"agent_id"`
	AgentConfigOverride *ConfigOverride `json:"agent_config_override"`
	BranchID            *string         `json:"branch_id"`
}

// Resubmit runs some runs again, as a new attempt.
func (a *App) Resubmit(ctx context.Context, c principal.Caller, invocationID string, in ResubmitInput) (*testingv1.Invocation, error) {
	var v apperr.Validator
	checkBranch(&v, in.BranchID)
	a.checkOverride(&v, in.AgentConfigOverride)
	if err := v.Err(); err != nil {
		return nil, err
	}
	// An expired invocation's runs (those not resubmitted too) are gone.
	cur, err := a.Invocation(ctx, c.WorkspaceID, invocationID)
	if err != nil {
		return nil, err
	}
	if err := checkBinding(c.Principal, cur.GetAgentConfigJson(), in.AgentConfigOverride); err != nil {
		return nil, err
	}
	if cur.GetLoad() != nil {
		v.Add("A load test is not resubmitted: start a new one", "value_error", "body", "test_run_ids")
		return nil, v.Err()
	}
	if in.AgentID != cur.GetAgentId() {
		v.Add("The invocation ran on agent "+cur.GetAgentId(), "value_error", "body", "agent_id")
	}
	total := len(cur.GetTests()) * int(max(cur.GetRepeatCount(), 1))
	seen := map[string]bool{}
	for i, id := range in.TestRunIDs {
		idx, err := domain.RunIndex(invocationID, id)
		switch {
		case err != nil || idx >= total:
			v.Add("Test run "+id+" not found in this invocation", "value_error", "body", "test_run_ids", i)
		case seen[id]:
			v.Add("Duplicate test run id "+id, "value_error", "body", "test_run_ids", i)
		}
		seen[id] = true
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if cur.GetStatus() != domain.InvocationRunning { // a running one is refused below
		if err := a.checkQuotas(ctx, c.WorkspaceID, int64(len(in.TestRunIDs))); err != nil {
			return nil, err
		}
	}
	var cfg []byte
	if in.AgentConfigOverride != nil {
		cfg = in.AgentConfigOverride.ConversationConfig
	}
	priorPassed, priorFailed, err := a.priorOutcomes(ctx, cur, in.TestRunIDs)
	if err != nil {
		return nil, err
	}
	return a.Invocations.Update(ctx, c.WorkspaceID, invocationID, c.CommandID, func(inv *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
		if inv.Status == domain.InvocationRunning {
			return nil, apperr.InvocationRunning
		}
		// A deleted agent is not run again, as run-tests refuses it. Looked
		// up in the update, not before it: a replay under the same key still
		// answers what its first attempt did (Update answers the recorded
		// state when the mutation fails).
		if _, err := a.Agent(ctx, c.WorkspaceID, inv.GetAgentId()); err != nil {
			return nil, err
		}
		inv.Resubmissions = append(inv.Resubmissions, &testingv1.Resubmission{
			Attempt: int32(len(inv.Resubmissions) + 2), RunIds: in.TestRunIDs, AtUnix: a.Now().Unix(),
			ByUserEmail: c.Email, AgentConfigJson: cfg, BranchId: deref(in.BranchID),
			PriorPassed: priorPassed, PriorFailed: priorFailed, PriorKnown: true,
		})
		inv.JobsTotal += int64(len(in.TestRunIDs))
		// Passed and failed counts stay those of the last completion until
		// this attempt completes: listings show them as progress.
		inv.Status, inv.CompletedAtUnix, inv.CancelledAtUnix = domain.InvocationRunning, nil, nil
		if inv.RepeatCount > 1 {
			inv.BucketingStatus, inv.BucketingError = domain.BucketingPending, ""
		}
		return &testingv1.InvocationResubmitted{Meta: meta, Invocation: inv}, nil
	})
}

// Counts reads an invocation's progress counters: runs done and passed.
// Runners add to them in batches after storing results, each run once; a
// runner that dies before adding its last results leaves them short.
func (a *App) Counts(ctx context.Context, invocationID string, attempt int32) (done, passed int64, err error) {
	read := func(name string) (int64, error) {
		subject, err := events.TestCountSubject(invocationID, attempt, name)
		if err != nil {
			return 0, err
		}
		return a.Counters.Count(ctx, subject)
	}
	if done, err = read("done"); err != nil {
		return 0, 0, err
	}
	passed, err = read("passed")
	return done, passed, err
}

// ExpectedAttempts maps each resubmitted run to its newest attempt.
func ExpectedAttempts(inv *testingv1.Invocation) map[string]int32 {
	out := map[string]int32{}
	for _, r := range inv.GetResubmissions() {
		for _, id := range r.GetRunIds() {
			out[id] = r.GetAttempt()
		}
	}
	return out
}

// A run job belongs to the round of runs it was queued for, its attempt:
// 1 for the runs as invoked, then one per resubmission. A cancel purges
// the round's queued jobs, but not one queued after the purge (the
// enqueuer lagging behind) nor one a runner holds, and a resubmission has
// the invocation running again: such a job, run then, would bring back
// runs the user cancelled, counted, and could store its result after the
// newer attempt's. The enqueuer and the runners therefore hold every job
// to these two rules.

// NewestAttempt is the attempt of the invocation's newest round.
func NewestAttempt(inv *testingv1.Invocation) int32 {
	if rs := inv.GetResubmissions(); len(rs) > 0 {
		return rs[len(rs)-1].GetAttempt()
	}
	return 1
}

// RunsRound reports whether the invocation is running the round of
// attempt: only then are its jobs queued and its runs started. A round's
// jobs are queued for the runs it names alone (RunEnqueuer).
func RunsRound(inv *testingv1.Invocation, attempt int32) bool {
	return inv.GetStatus() == domain.InvocationRunning && NewestAttempt(inv) == attempt
}

// KeepsResult reports whether a run of a job of attempt, once played, has
// its result stored: a run started before a cancel keeps it, unless a
// resubmission has started a newer round since.
func KeepsResult(inv *testingv1.Invocation, attempt int32) bool {
	return NewestAttempt(inv) == attempt
}

// priorLookups is how many resubmitted runs are read one by one; more are
// read in one pass over the invocation's results.
const priorLookups = 1000

// priorOutcomes counts how the runs ids (of inv, which is not running)
// last ended: passed and failed. The listing shows a resubmission's
// other runs as the last completion left them, so it takes these out.
func (a *App) priorOutcomes(ctx context.Context, inv *testingv1.Invocation, ids []string) (passed, failed int64, err error) {
	count := func(r *testingv1.RunResult) {
		switch r.GetStatus() {
		case domain.RunPassed:
			passed++
		case domain.RunFailed:
			failed++
		}
	}
	if len(ids) <= priorLookups {
		for _, id := range ids {
			r, err := a.lastRunResult(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), id)
			if err != nil {
				return 0, 0, err
			}
			count(r) // nil (no result: cancelled before it had one) counts for neither
		}
		return passed, failed, nil
	}
	total := len(inv.GetTests()) * int(max(inv.GetRepeatCount(), 1))
	only := domain.NewBitset(total)
	for _, id := range ids {
		if idx, err := domain.RunIndex(inv.GetInvocationId(), id); err == nil && idx < total {
			only.Set(idx)
		}
	}
	_, err = a.EachRun(ctx, inv, false, only, func(_ int, _ string, res *testingv1.RunResult, _ string) error {
		if res != nil {
			count(res)
		}
		return nil
	})
	return passed, failed, err
}

// lastRunResult is the newest result of a run, of whichever attempt, or
// nil when it has none.
func (a *App) lastRunResult(ctx context.Context, ws, invocationID, runID string) (*testingv1.RunResult, error) {
	subject, err := events.RunSubject(ws, invocationID, runID)
	if err != nil {
		return nil, err
	}
	rec, found, err := a.Runs.Last(ctx, subject)
	if err != nil || !found {
		return nil, err
	}
	return runOf(esproto.Decode(rec))
}
