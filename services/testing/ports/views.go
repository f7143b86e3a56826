package ports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/voiceai-platform/voiceai/pkg/wire"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Every field of spec 2.4 is present in each message we return; these are
// the defaults of those a message does not carry.
func messageDefaults() map[string]any {
	d := map[string]any{
		"role": "user", "time_in_call_secs": 0, "message": "",
		"feedback":     map[string]any{"score": "like", "time_in_call_secs": 0},
		"llm_override": "", "producing_llm": "",
		"interrupted": false, "ignored_as_backchannel": false, "original_message": "",
		"source_medium": "text", "source_event_id": 0, "used_static_kb_document_ids": []any{}, "user_identifier": "",
	}
	for k, m := range messageMembers { // an object at its members' defaults; an array empty
		if m.items {
			d[k] = []any{}
		} else {
			d[k] = m.defaults
		}
	}
	return d
}

// defaultMessage is messageDefaults encoded once, its keys in order, and
// each key as written before its value ("key":).
var defaultMessage, defaultMessageKeys, defaultMessageKeyJSON = func() (map[string]json.RawMessage, []string, [][]byte) {
	out := map[string]json.RawMessage{}
	for k, v := range messageDefaults() {
		out[k], _ = json.Marshal(v)
	}
	keys := slices.Sorted(maps.Keys(out))
	written := make([][]byte, len(keys))
	for i, k := range keys {
		written[i] = keyJSON(k)
	}
	return out, keys, written
}()

// defaultMessageLen is how long the defaults of one message are written.
var defaultMessageLen = func() int {
	n := 2
	for i, k := range defaultMessageKeys {
		n += len(defaultMessageKeyJSON[i]) + len(defaultMessage[k]) + 1
	}
	return n
}()

// keyJSON is k as an object key is written: "k":.
func keyJSON(k string) []byte {
	b, _ := json.Marshal(k)
	return append(b, ':')
}

// FullMessages is fullMessages, for the edge.
func FullMessages(raw []byte) json.RawMessage { return fullMessages(raw) }

// LatencyOf is latencyOf with a run's turns, for the edge.
func LatencyOf(ms, firstTokenMs []int64) any {
	if len(ms) == 0 {
		return nil
	}
	l := latencyOf(ms, firstTokenMs)
	l.TurnMs, l.FirstTokenMs = ms, firstTokenMs
	return l
}

// fullMessages completes each message of a JSON array with the defaults;
// a field the message carries (and is not null) wins. It writes the JSON
// directly, the defaults' keys written once: a run's view is encoded for
// every run of a large invocation (250,000 of them in one GET), and
// encoding maps, then each key as it was written, was most of that cost.
func fullMessages(raw []byte) json.RawMessage {
	var in []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &in)
	b := make([]byte, 0, len(raw)+len(in)*defaultMessageLen+2)
	b = append(b, '[')
	var extra []string
	for i, m := range in {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		defaults := 0 // keys of m that are defaults'
		for j, k := range defaultMessageKeys {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, defaultMessageKeyJSON[j]...)
			v, ok := m[k]
			if ok {
				defaults++
			}
			switch {
			case ok && !isNull(v):
				if n := messageMembers[k]; n != nil {
					v = n.complete(v)
				}
				b = append(b, v...)
			case k == "feedback":
				b = append(b, `{"score":"like","time_in_call_secs":`...)
				if t, ok := m["time_in_call_secs"]; ok && !isNull(t) {
					b = append(b, t...)
				} else {
					b = append(b, '0')
				}
				b = append(b, '}')
			default:
				b = append(b, defaultMessage[k]...)
			}
		}
		if len(m) > defaults { // fields beyond the spec's, in key order
			extra = extra[:0]
			for k, v := range m {
				if _, isDefault := defaultMessage[k]; !isDefault && !isNull(v) {
					extra = append(extra, k)
				}
			}
			slices.Sort(extra)
			for _, k := range extra {
				b = append(b, ',')
				b = append(b, keyJSON(k)...)
				b = append(b, m[k]...)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// isNull reports whether a raw JSON value is null.
func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// TestInfo is a test's definition as a run shows it (spec 2.3), every
// field present.
func TestInfo(t *testingv1.Test) map[string]any {
	def := map[string]json.RawMessage{}
	_ = json.Unmarshal(t.GetDefinitionJson(), &def)
	info := map[string]any{}
	for k, v := range def {
		info[k] = v
	}
	fcm := map[string]any{"conversation_id": "", "agent_id": "", "branch_id": "", "workflow_node_id": "", "original_agent_reply": []any{}}
	if raw, ok := def["from_conversation_metadata"]; ok {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		for k, v := range m {
			if v != nil {
				fcm[k] = v
			}
		}
		if r, ok := m["original_agent_reply"]; ok && r != nil {
			b, _ := json.Marshal(r)
			fcm["original_agent_reply"] = fullMessages(b)
		}
	}
	info["from_conversation_metadata"] = fcm
	info["chat_history"] = fullMessages(def["chat_history"])
	setDefault := func(k string, v any) {
		if raw, ok := def[k]; !ok || string(raw) == "null" {
			info[k] = v
		}
	}
	setDefault("dynamic_variables", map[string]any{})
	setDefault("conversation_initiation_source", "unknown")
	setDefault("environment", "production")
	setDefault("success_examples", []any{})
	setDefault("failure_examples", []any{})
	conds := []string{}
	var one string
	if json.Unmarshal(def["success_condition"], &one) == nil && one != "" {
		conds = append(conds, one)
	}
	var many []string
	if json.Unmarshal(def["success_conditions"], &many) == nil {
		conds = append(conds, many...)
	}
	info["success_conditions"] = conds
	info["type"] = t.GetType()
	return info
}

// metadataTestType is TestRunMetadata.test_type: "tool" tests are
// "tool_call" there.
func metadataTestType(t string) string {
	if t == domain.TypeTool {
		return "tool_call"
	}
	return t
}

// RunTestView is a test as every run of it shows it, encoded once.
type RunTestView struct {
	Info        json.RawMessage // test_info
	Environment string
}

// NewRunTestView encodes a test's test_info.
func NewRunTestView(t *testingv1.Test) RunTestView {
	info := TestInfo(t)
	env := "production"
	if e, ok := info["environment"].(json.RawMessage); ok {
		_ = json.Unmarshal(e, &env)
	}
	b, _ := json.Marshal(info)
	return RunTestView{Info: b, Environment: env}
}

// runJSON is a run as the API shows it (spec 2.3).
type runJSON struct {
	TestRunID         string               `json:"test_run_id"`
	TestInvocationID  string               `json:"test_invocation_id"`
	AgentID           string               `json:"agent_id"`
	Status            string               `json:"status"`
	TestID            string               `json:"test_id"`
	TestInfo          json.RawMessage      `json:"-"` // written by writeRun, already compact
	BranchID          string               `json:"branch_id"`
	WorkflowNodeID    string               `json:"workflow_node_id"`
	AgentResponses    json.RawMessage      `json:"-"` // written by writeRun, already compact
	TestName          string               `json:"test_name"`
	ConditionResult   wire.ConditionResult `json:"condition_result"`
	LastUpdatedAtUnix int64                `json:"last_updated_at_unix"`
	Metadata          metadataJSON         `json:"metadata"`
	RootFolderID      string               `json:"root_folder_id"`
	RootFolderName    string               `json:"root_folder_name"`
	Environment       string               `json:"environment"`
	// Beyond the spec, once a run has a result.
	Attempt    int32      `json:"attempt,omitempty"`
	ModelUsage *usageJSON `json:"model_usage,omitempty"`
	Error      string     `json:"error,omitempty"`
	// Beyond the spec, when the judge gave more than one verdict: each
	// verdict, and the share that agrees with condition_result.result.
	JudgeVotes     []voteJSON `json:"judge_votes,omitempty"`
	JudgeAgreement *float64   `json:"judge_agreement,omitempty"`
	// Beyond the spec: the model that played the agent (model_usage is the
	// judge's), and how fast the agent answered.
	AgentModelUsage *usageJSON         `json:"agent_model_usage,omitempty"`
	AgentLatency    *wire.AgentLatency `json:"agent_latency,omitempty"`
	// Beyond the spec: the test's latency budgets the run went over
	// (which failed it).
	LatencyBudgetBreaches []wire.BudgetBreach `json:"latency_budget_breaches,omitempty"`
	// Review is the run's current label, when people labelled the verdict
	// it shows (not an earlier attempt's).
	Review *wire.RunLabel `json:"review,omitempty"`
}

// latencyOf summarises turn response times and times to first token
// (nearest-rank percentiles); none give nulls.
func latencyOf(ms, firstTokenMs []int64) wire.AgentLatency {
	l := wire.AgentLatency{Turns: len(ms)}
	l.P50Ms, l.P95Ms, l.MaxMs = percentiles(ms)
	l.FirstTokenP50Ms, l.FirstTokenP95Ms, l.FirstTokenMaxMs = percentiles(firstTokenMs)
	return l
}

// latencyOfTallies is latencyOf over tallied times.
func latencyOfTallies(turns, firstTokens *latencyTally) wire.AgentLatency {
	l := wire.AgentLatency{Turns: turns.n}
	l.P50Ms, l.P95Ms, l.MaxMs = turns.percentiles()
	l.FirstTokenP50Ms, l.FirstTokenP95Ms, l.FirstTokenMaxMs = firstTokens.percentiles()
	return l
}

// percentiles are the nearest-rank p50, p95 and max of ms (nil: none):
// domain.NearestRankPercentile, which latency budgets are checked with.
func percentiles(ms []int64) (p50, p95, top *int64) {
	rank := func(p float64) *int64 {
		v, ok := domain.NearestRankPercentile(ms, p)
		if !ok {
			return nil
		}
		return &v
	}
	return rank(0.50), rank(0.95), rank(1)
}

// latencyTally counts turn times by value, so that percentiles over every
// turn of a large invocation cost memory per distinct millisecond value
// (bounded by the run time limit), not per turn; its percentiles are
// percentiles' exactly.
type latencyTally struct {
	counts map[int64]int
	n      int
}

func (t *latencyTally) add(ms ...int64) {
	if t.counts == nil {
		t.counts = map[int64]int{}
	}
	for _, v := range ms {
		t.counts[v]++
	}
	t.n += len(ms)
}

// percentiles are the nearest-rank p50, p95 and max of the values added
// (nil: none).
func (t *latencyTally) percentiles() (p50, p95, top *int64) {
	if t.n == 0 {
		return nil, nil, nil
	}
	values := slices.Sorted(maps.Keys(t.counts))
	rank := func(p float64) *int64 {
		want, seen := max(int(math.Ceil(p*float64(t.n))), 1), 0
		for _, v := range values {
			if seen += t.counts[v]; seen >= want {
				return &v
			}
		}
		return &values[len(values)-1]
	}
	return rank(0.50), rank(0.95), rank(1)
}

// UsageView is a model's usage as runs show it (nil: none).
func UsageView(u *testingv1.ModelUsage) any {
	if v := usageView(u); v != nil {
		return v
	}
	return nil
}

func usageView(u *testingv1.ModelUsage) *usageJSON {
	if u == nil {
		return nil
	}
	return &usageJSON{Provider: u.GetProvider(), Model: u.GetModel(), PromptTokens: u.GetPromptTokens(),
		CompletionTokens: u.GetCompletionTokens(), TotalTokens: u.GetTotalTokens(), ModelCalls: u.GetModelCalls(),
		CachedModelCalls: u.GetCachedModelCalls()}
}

type voteJSON struct {
	Result  string `json:"result"`
	Summary string `json:"summary"`
}

type metadataJSON struct {
	WorkspaceID    string `json:"workspace_id"`
	TestName       string `json:"test_name"`
	RanByUserEmail string `json:"ran_by_user_email"`
	TestType       string `json:"test_type"`
}

type usageJSON struct {
	Provider         string `json:"provider"`
	Model            string `json:"model"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TotalTokens      int64  `json:"total_tokens"`
	ModelCalls       int32  `json:"model_calls"`
	CachedModelCalls int32  `json:"cached_model_calls,omitempty"`
}

// RunView is one run (spec 2.3, every field present). res is nil for a
// run without a result for its newest attempt, whose status is unrun.
func RunView(inv *testingv1.Invocation, pt *testingv1.PlannedTest, tv RunTestView, runID string, res *testingv1.RunResult, unrun string) runJSON {
	name := orDefault(pt.GetTestName(), "Unknown Test")
	v := runJSON{
		TestRunID: runID, TestInvocationID: inv.GetInvocationId(), AgentID: inv.GetAgentId(), Status: domain.RunPending,
		TestID: pt.GetTestId(), TestInfo: tv.Info, BranchID: inv.GetBranchId(), WorkflowNodeID: pt.GetWorkflowNodeId(),
		AgentResponses: json.RawMessage("[]"), TestName: name, LastUpdatedAtUnix: inv.GetCreatedAtUnix(),
		Metadata: metadataJSON{WorkspaceID: inv.GetWorkspaceId(), TestName: name, RanByUserEmail: inv.GetRanByUserEmail(),
			TestType: metadataTestType(pt.GetTestType())},
		RootFolderID: pt.GetRootFolderId(), RootFolderName: pt.GetRootFolderName(), Environment: tv.Environment,
	}
	v.ConditionResult.Result, v.ConditionResult.Rationale.Messages = domain.ConditionUnknown, []string{}
	if unrun != "" {
		v.Status = unrun
	}
	if inv.GetStatus() == domain.InvocationCancelled {
		v.LastUpdatedAtUnix = inv.GetCancelledAtUnix()
	}
	if res != nil {
		v.Status, v.ConditionResult.Result, v.ConditionResult.Rationale.Summary = res.GetStatus(), res.GetConditionResult(), res.GetRationaleSummary()
		if m := res.GetRationaleMessages(); m != nil {
			v.ConditionResult.Rationale.Messages = m
		}
		v.AgentResponses = fullMessages(res.GetAgentResponsesJson())
		v.LastUpdatedAtUnix = res.GetFinishedAtUnixMs() / 1000
		v.ModelUsage, v.AgentModelUsage = usageView(res.GetUsage()), usageView(res.GetAgentUsage())
		if ms := res.GetAgentTurnMs(); len(ms) > 0 {
			first := res.GetAgentFirstTokenMs()
			l := latencyOf(ms, first)
			l.TurnMs, l.FirstTokenMs = ms, first
			v.AgentLatency = &l
		}
		for _, b := range res.GetLatencyBudgetBreaches() {
			v.LatencyBudgetBreaches = append(v.LatencyBudgetBreaches, wire.BudgetBreach{Metric: b.GetMetric(), MeasuredMs: b.GetMeasuredMs(), BudgetMs: b.GetBudgetMs()})
		}
		v.Attempt, v.Error = res.GetAttempt(), res.GetError()
		if votes := res.GetJudgeVotes(); len(votes) > 1 {
			agree := 0
			for _, jv := range votes {
				v.JudgeVotes = append(v.JudgeVotes, voteJSON{Result: jv.GetResult(), Summary: jv.GetSummary()})
				if jv.GetResult() == res.GetConditionResult() {
					agree++
				}
			}
			// Two decimals: 2 of 3 is 0.67.
			share := math.Round(float64(agree)/float64(len(votes))*100) / 100
			v.JudgeAgreement = &share
		}
	}
	return v
}

// writeRun writes a run's JSON to w. test_info and agent_responses are
// spliced in as they are: encoding/json would re-validate (compact) them
// for every run of a large invocation.
func writeRun(w io.Writer, v runJSON) error {
	rest, err := json.Marshal(v)
	if err != nil {
		return err
	}
	parts := [][]byte{[]byte(`{"test_info":`), v.TestInfo, []byte(`,"agent_responses":`), v.AgentResponses, []byte(","), rest[1:]}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// pendingRuns writes runs without a result quickly: they differ only by
// their id among the runs of one test with one status, so that JSON is
// built once around a placeholder id.
type pendingRuns map[pendingKey][2][]byte // JSON before and after the id

type pendingKey struct {
	test   int
	status string
}

const runIDPlaceholder = `\u0000run_id\u0000` // as encoding/json writes "\x00run_id\x00"

func (p pendingRuns) write(w io.Writer, inv *testingv1.Invocation, testIndex int, tv RunTestView, runID, status string) error {
	key := pendingKey{testIndex, status}
	t, ok := p[key]
	if !ok {
		var b bytes.Buffer
		if err := writeRun(&b, RunView(inv, inv.GetTests()[testIndex], tv, "\x00run_id\x00", nil, status)); err != nil {
			return err
		}
		before, after, found := bytes.Cut(b.Bytes(), []byte(runIDPlaceholder))
		if !found {
			return fmt.Errorf("run template without its id placeholder")
		}
		t = [2][]byte{before, after}
		p[key] = t
	}
	for _, part := range [][]byte{t[0], []byte(runID), t[1]} {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// GroupView is a result group (spec 2.2).
func GroupView(g *testingv1.ResultGroup) map[string]any {
	buckets := make([]map[string]any, 0, len(g.GetBuckets()))
	for _, b := range g.GetBuckets() {
		ids := b.GetTestRunIds()
		if ids == nil {
			ids = []string{}
		}
		buckets = append(buckets, map[string]any{"test_run_ids": ids, "title": b.GetTitle(), "reason": b.GetReason(), "status": b.GetStatus()})
	}
	return map[string]any{"test_id": g.GetTestId(), "test_name": g.GetTestName(), "workflow_node_id": g.GetWorkflowNodeId(), "buckets": buckets}
}
