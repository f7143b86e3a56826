package app

import (
	"context"
	"errors"
	"sort"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Bounds of the review queue and of the judge report's flip rate: each
// reads the results of the workspace's recent invocations, so their cost
// is bounded whatever its history.
const (
	ReviewInvocations = 20   // the most recent invocations read
	ReviewMaxRuns     = 5000 // run results read at most
	// ReviewSamplePerMille is the share of passed runs drawn for review,
	// per thousand, unless the request says otherwise.
	ReviewSamplePerMille = 100
)

// Why a run is in the review queue.
const (
	ReasonFailed         = "failed"
	ReasonVotesDisagreed = "votes_disagreed"
	ReasonSampledPass    = "sampled_pass"
)

// ReviewQuery selects the review queue.
type ReviewQuery struct {
	WorkspaceID string
	AgentID     string
	Limit       int
	// SamplePerMille is the share of passes drawn (0..1000).
	SamplePerMille int
	// IncludeLabelled keeps runs whose verdict already has a label.
	IncludeLabelled bool
}

// ReviewItem is a run to review: its result, why it is asked for, and the
// success conditions its judge was given.
type ReviewItem struct {
	Invocation *testingv1.Invocation
	Test       *testingv1.PlannedTest
	Result     *testingv1.RunResult
	Conditions []string
	Reasons    []string
	Label      *testingv1.RunLabel // the label of this verdict, when IncludeLabelled
}

// votesDisagree reports whether the judge's verdicts of a run differ.
func votesDisagree(votes []*testingv1.JudgeVote) bool {
	for _, v := range votes {
		if v.GetResult() != votes[0].GetResult() {
			return true
		}
	}
	return false
}

// reasons are why res is worth a reviewer's look, nil when it is not.
func reasons(ws string, res *testingv1.RunResult, perMille int) []string {
	var out []string
	if res.GetStatus() == domain.RunFailed {
		out = append(out, ReasonFailed)
	}
	if votesDisagree(res.GetJudgeVotes()) {
		out = append(out, ReasonVotesDisagreed)
	}
	if res.GetStatus() == domain.RunPassed && len(out) == 0 && domain.Sampled(ws, res.GetRunId(), perMille) {
		out = append(out, ReasonSampledPass)
	}
	return out
}

// recentResults calls fn with each current result of the workspace's
// recent invocations (newest invocation first, each in stream order),
// reading at most ReviewMaxRuns; fn returns false to stop. begin, when
// given, is called with each invocation before its results are read (fn
// runs inside a read of the runs log, so it must not start another).
func (a *App) recentResults(ctx context.Context, ws, agentID string, begin func(*testingv1.Invocation) error,
	fn func(inv *testingv1.Invocation, res *testingv1.RunResult) (bool, error)) error {
	page, _, err := a.ReadModel.PageInvocations(ctx, InvocationFilter{WorkspaceID: ws, AgentID: agentID, Limit: ReviewInvocations})
	if err != nil {
		return err
	}
	budget := ReviewMaxRuns
	for _, s := range page {
		inv, _, err := a.Invocations.Get(ctx, ws, s.ID)
		if err != nil {
			return err
		}
		if a.Expired(inv) {
			continue
		}
		if begin != nil {
			if err := begin(inv); err != nil {
				return err
			}
		}
		err = a.EachRunResult(ctx, inv, func(res *testingv1.RunResult) error {
			budget--
			more, err := fn(inv, res)
			if err == nil && (!more || budget <= 0) {
				return errEnoughRead
			}
			return err
		})
		if errors.Is(err, errEnoughRead) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// errEnoughRead ends a read of the runs log that has what it needs: the
// log goes on reading (and decoding) every record until its callback
// fails, so returning nil would read a 250,000-run invocation whole.
var errEnoughRead = errors.New("enough read")

// ReviewQueue lists runs for people to label: failed runs, runs whose
// judge votes disagreed and a deterministic sample of passes, newest
// invocation first, runs whose verdict is labelled left out. A label of
// an earlier attempt does not review the verdict a resubmission made.
func (a *App) ReviewQueue(ctx context.Context, q ReviewQuery) ([]ReviewItem, error) {
	items := []ReviewItem{}
	defs := map[uint64][]string{}
	var labels map[string]*testingv1.RunLabel
	begin := func(inv *testingv1.Invocation) (err error) {
		labels, err = a.CurrentLabels(ctx, inv)
		return err
	}
	type found struct {
		inv *testingv1.Invocation
		res *testingv1.RunResult
		why []string
	}
	var picked []found
	err := a.recentResults(ctx, q.WorkspaceID, q.AgentID, begin, func(inv *testingv1.Invocation, res *testingv1.RunResult) (bool, error) {
		why := reasons(q.WorkspaceID, res, q.SamplePerMille)
		label := labels[res.GetRunId()]
		if !Reviews(label, res) {
			label = nil
		}
		if len(why) == 0 || (label != nil && !q.IncludeLabelled) {
			return true, nil
		}
		if ti := int(res.GetTestIndex()); ti < 0 || ti >= len(inv.GetTests()) {
			return true, nil
		}
		picked = append(picked, found{inv, res, why})
		if label != nil {
			items = append(items, ReviewItem{Label: label})
		} else {
			items = append(items, ReviewItem{})
		}
		return len(picked) < q.Limit, nil
	})
	if err != nil {
		return nil, err
	}
	// The tests' conditions, read once the runs log is no longer held.
	for i, p := range picked {
		pt := p.inv.GetTests()[p.res.GetTestIndex()]
		conds, ok := defs[pt.GetTestStreamSeq()]
		if !ok {
			def, err := a.DefinitionAt(ctx, pt.GetTestStreamSeq())
			if err != nil {
				return nil, err
			}
			conds = Conditions(def)
			defs[pt.GetTestStreamSeq()] = conds
		}
		items[i] = ReviewItem{Invocation: p.inv, Test: pt, Result: p.res, Conditions: conds, Reasons: p.why, Label: items[i].Label}
	}
	return items, nil
}

// ReportQuery selects the labels a judge report is made of.
type ReportQuery struct {
	WorkspaceID string
	JudgeModel  string // only this judge model
	TestID      string // only this test
	SinceUnix   int64  // only labels given since
}

// CriterionFigures are the labels of one criterion (a success condition).
type CriterionFigures struct {
	ID, Text       string
	Labels, Agreed int64
	// Confusion counts the criterion's own verdicts against the labels,
	// when the label names the verdict (a conversation's criteria).
	Confusion domain.Confusion
}

// DayFigures are a judge's labels of one day (UTC).
type DayFigures struct {
	Date      string // YYYY-MM-DD
	Confusion domain.Confusion
}

// JudgeFigures are what labels say of one judge model: on one test, on
// the evaluations of one agent's conversations (AgentID), or (neither) on
// everything it judged.
type JudgeFigures struct {
	JudgeProvider, JudgeModel string
	TestID, TestName          string
	// AgentID is set on a row of conversation evaluations: the labels of
	// that agent's re-judged conversation analyses.
	AgentID string
	// Labels counts every current label; Unknown those of verdicts the
	// judge left unknown, which are in no figure below.
	Labels, Unknown int64
	Confusion       domain.Confusion
	// Flipped of Pairs: pairs of verdicts of one transcript that differ,
	// over the recent runs the judge was asked more than once (Runs).
	Flipped, Pairs, FlipRuns int64
	Criteria                 []CriterionFigures
	Series                   []DayFigures
}

type judgeKey struct{ provider, model, test, agent string }

// JudgeReport is, for each judge model, on every test together and on
// each test: the labels, the agreement with them and Cohen's κ, the
// true-pass, true-fail and false-pass rates (each run's current label
// counts once), a day-by-day series, and the flip rate between repeated
// verdicts of the same transcript in recent runs (a judge and test with
// such runs and no label has a row of its own, with no label).
func (a *App) JudgeReport(ctx context.Context, q ReportQuery) ([]*JudgeFigures, int64, error) {
	filter, err := events.RunLabelsOfWorkspace(q.WorkspaceID)
	if err != nil {
		return nil, 0, err
	}
	rows := map[judgeKey]*JudgeFigures{}
	row := func(provider, model, test, name string) *JudgeFigures {
		k := judgeKey{provider: provider, model: model, test: test}
		if r, ok := rows[k]; ok {
			return r
		}
		r := &JudgeFigures{JudgeProvider: provider, JudgeModel: model, TestID: test, TestName: name}
		rows[k] = r
		return r
	}
	agentRow := func(provider, model, agent string) *JudgeFigures {
		k := judgeKey{provider: provider, model: model, agent: agent}
		if r, ok := rows[k]; ok {
			return r
		}
		r := &JudgeFigures{JudgeProvider: provider, JudgeModel: model, AgentID: agent}
		rows[k] = r
		return r
	}
	var total int64
	err = a.scan(ctx, q.WorkspaceID, filter, a.Runs.EachLast, func(rec Record) error {
		l, err := labelOf(rec)
		if err != nil {
			return err
		}
		if (q.JudgeModel != "" && l.GetJudgeModel() != q.JudgeModel) || (q.TestID != "" && l.GetTestId() != q.TestID) ||
			l.GetLabelledAtUnixMs()/1000 < q.SinceUnix {
			return nil
		}
		total++
		for _, r := range []*JudgeFigures{row(l.GetJudgeProvider(), l.GetJudgeModel(), "", ""),
			row(l.GetJudgeProvider(), l.GetJudgeModel(), l.GetTestId(), l.GetTestName())} {
			r.add(l)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	// Labels of conversations' evaluations count on the judge's row and on
	// the agent's conversations' row (they are of no test), a deleted
	// conversation's too: its labels' notes are sealed with it, their
	// verdicts (all the report reads) stay in the clear for it.
	if q.TestID == "" {
		filter, err := events.ConversationLabelsOfWorkspace(q.WorkspaceID)
		if err != nil {
			return nil, 0, err
		}
		err = a.scan(ctx, q.WorkspaceID, filter, a.Runs.EachLast, func(rec Record) error {
			l, err := conversationLabelOf(rec)
			if err != nil {
				return err
			}
			if (q.JudgeModel != "" && l.GetJudgeModel() != q.JudgeModel) || l.GetLabelledAtUnixMs()/1000 < q.SinceUnix {
				return nil
			}
			total++
			v := verdictLabel{judged: l.GetJudgedResult(), correct: l.GetVerdictCorrect(), criteria: l.GetCriteria(), at: l.GetLabelledAtUnixMs()}
			row(l.GetJudgeProvider(), l.GetJudgeModel(), "", "").count(v)
			agentRow(l.GetJudgeProvider(), l.GetJudgeModel(), l.GetAgentId()).count(v)
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	// The flip rate, from the recent runs of the judges and tests above.
	err = a.recentResults(ctx, q.WorkspaceID, "", nil, func(inv *testingv1.Invocation, res *testingv1.RunResult) (bool, error) {
		votes := res.GetJudgeVotes()
		ti := int(res.GetTestIndex())
		if len(votes) < 2 || ti < 0 || ti >= len(inv.GetTests()) {
			return true, nil
		}
		test := inv.GetTests()[ti].GetTestId()
		results := make([]string, len(votes))
		for i, v := range votes {
			results[i] = v.GetResult()
		}
		u := res.GetUsage()
		if (q.JudgeModel != "" && u.GetModel() != q.JudgeModel) || (q.TestID != "" && test != q.TestID) {
			return true, nil
		}
		// A judge without labels still has a flip rate: its row says so
		// with no label.
		f, p := domain.Flips(results)
		for _, r := range []*JudgeFigures{row(u.GetProvider(), u.GetModel(), "", ""),
			row(u.GetProvider(), u.GetModel(), test, inv.GetTests()[ti].GetTestName())} {
			r.Flipped, r.Pairs, r.FlipRuns = r.Flipped+f, r.Pairs+p, r.FlipRuns+1
		}
		return true, nil
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]*JudgeFigures, 0, len(rows))
	for _, r := range rows {
		sort.Slice(r.Series, func(i, j int) bool { return r.Series[i].Date < r.Series[j].Date })
		sort.Slice(r.Criteria, func(i, j int) bool { return r.Criteria[i].ID < r.Criteria[j].ID })
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.JudgeProvider+"/"+a.JudgeModel != b.JudgeProvider+"/"+b.JudgeModel {
			return a.JudgeProvider+"/"+a.JudgeModel < b.JudgeProvider+"/"+b.JudgeModel
		}
		if a.scope() != b.scope() {
			return a.scope() < b.scope()
		}
		return a.TestName+a.TestID+a.AgentID < b.TestName+b.TestID+b.AgentID
	})
	return out, total, nil
}

// Scopes of a report's row.
const (
	ScopeAll           = "all"           // everything the judge model judged
	ScopeTest          = "test"          // one test's runs
	ScopeConversations = "conversations" // one agent's conversations' evaluations
)

// Scope is what the row's labels are of.
func (r *JudgeFigures) Scope() string {
	switch {
	case r.TestID != "":
		return ScopeTest
	case r.AgentID != "":
		return ScopeConversations
	}
	return ScopeAll
}

// scope orders rows: the judge's whole first, then its tests, then its
// agents' conversations.
func (r *JudgeFigures) scope() int {
	return map[string]int{ScopeAll: 0, ScopeTest: 1, ScopeConversations: 2}[r.Scope()]
}

// verdictLabel is what the report reads of a label, a run's or a
// conversation's.
type verdictLabel struct {
	judged   string
	correct  bool
	criteria []*testingv1.CriterionLabel
	at       int64 // labelled, unix ms
}

// add counts a run's current label.
func (r *JudgeFigures) add(l *testingv1.RunLabel) {
	r.count(verdictLabel{judged: l.GetJudgedResult(), correct: l.GetVerdictCorrect(), criteria: l.GetCriteria(), at: l.GetLabelledAtUnixMs()})
}

// count counts a current label.
func (r *JudgeFigures) count(l verdictLabel) {
	r.Labels++
	for _, c := range l.criteria {
		if r.Scope() == ScopeAll {
			break // criteria are a test's or an agent's own
		}
		i := 0
		for i < len(r.Criteria) && r.Criteria[i].ID != c.GetId() {
			i++
		}
		if i == len(r.Criteria) {
			r.Criteria = append(r.Criteria, CriterionFigures{ID: c.GetId(), Text: c.GetText()})
		}
		r.Criteria[i].Labels++
		if c.GetCorrect() {
			r.Criteria[i].Agreed++
		}
		if j := c.GetJudgedResult(); j == domain.ConditionSuccess || j == domain.ConditionFailure {
			passed := j == domain.ConditionSuccess
			r.Criteria[i].Confusion.Add(passed, passed == c.GetCorrect())
		}
	}
	judged := l.judged
	if judged != domain.ConditionSuccess && judged != domain.ConditionFailure {
		r.Unknown++
		return
	}
	passed := judged == domain.ConditionSuccess
	truth := passed == l.correct
	r.Confusion.Add(passed, truth)
	date := time.UnixMilli(l.at).UTC().Format(time.DateOnly)
	i := 0
	for i < len(r.Series) && r.Series[i].Date != date {
		i++
	}
	if i == len(r.Series) {
		r.Series = append(r.Series, DayFigures{Date: date})
	}
	r.Series[i].Confusion.Add(passed, truth)
}
