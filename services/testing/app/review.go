package app

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/cursor"
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

// reviewPosition is where a read of the recent results stopped: after
// the result stored at Seq of invocation ID (at its place in listings),
// with the invocations and results read until then, that one included,
// counted against the read's bounds. A review queue's cursor holds it.
type reviewPosition struct {
	Created      int64  `json:"c"`
	CreatedNanos int64  `json:"n,omitempty"`
	ID           string `json:"i"`
	Seq          uint64 `json:"s"`
	Invocations  int    `json:"v"`
	Read         int    `json:"r"`
}

// recentResults calls fn with each current result of the workspace's
// recent invocations (newest invocation first, each in stream order) and
// the position after it, reading at most ReviewInvocations invocations
// and ReviewMaxRuns results; fn returns false to stop. From a position
// (nil: the start), the read goes on after it, within what is left of
// the same bounds. begin, when given, is called with each invocation
// before its results are read (fn runs inside a read of the runs log, so
// it must not start another).
func (a *App) recentResults(ctx context.Context, ws, agentID string, from *reviewPosition, begin func(*testingv1.Invocation) error,
	fn func(inv *testingv1.Invocation, res *testingv1.RunResult, at reviewPosition) (bool, error)) error {
	type toRead struct {
		at    InvocationPosition
		after uint64 // the results stored up to this sequence were read before
	}
	var reads []toRead
	counted, read := 0, 0 // invocations and results read before
	filter := InvocationFilter{WorkspaceID: ws, AgentID: agentID, Limit: ReviewInvocations}
	if from != nil {
		at := InvocationPosition{Created: from.Created, CreatedNanos: from.CreatedNanos, ID: from.ID}
		reads = append(reads, toRead{at: at, after: from.Seq})
		counted, read = from.Invocations-1, from.Read
		filter.After, filter.Limit = &at, ReviewInvocations-from.Invocations
	}
	if filter.Limit > 0 {
		page, _, err := a.ReadModel.PageInvocations(ctx, filter)
		if err != nil {
			return err
		}
		for _, s := range page {
			reads = append(reads, toRead{at: s.PositionOf()})
		}
	}
	for i, r := range reads {
		if read >= ReviewMaxRuns {
			return nil
		}
		inv, _, err := a.Invocations.Get(ctx, ws, r.at.ID)
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
		err = a.eachRunResultAfter(ctx, inv, r.after, func(res *testingv1.RunResult, seq uint64) error {
			read++
			more, err := fn(inv, res, reviewPosition{Created: r.at.Created, CreatedNanos: r.at.CreatedNanos, ID: r.at.ID, Seq: seq,
				Invocations: counted + i + 1, Read: read})
			if err == nil && (!more || read >= ReviewMaxRuns) {
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

// ReviewQueue is the page of the review queue that token names ("": the
// first): failed runs, runs whose judge votes disagreed and a
// deterministic sample of passes, newest invocation first, runs whose
// verdict is labelled left out. A label of an earlier attempt does not
// review the verdict a resubmission made. A token is bound to the
// query's filters; its pages go on through the same recent invocations
// and results as one page would (ReviewInvocations, ReviewMaxRuns).
func (a *App) ReviewQueue(ctx context.Context, q ReviewQuery, token string) (Page[ReviewItem], error) {
	scope := cursor.Scope("review-queue", q.WorkspaceID, q.AgentID, strconv.Itoa(q.SamplePerMille), strconv.FormatBool(q.IncludeLabelled))
	from, err := cursor.After[reviewPosition](a.Cursors, scope, token)
	if err != nil {
		return Page[ReviewItem]{}, err
	}
	defs := map[uint64][]string{}
	var labels map[string]*testingv1.RunLabel
	begin := func(inv *testingv1.Invocation) (err error) {
		labels, err = a.CurrentLabels(ctx, inv)
		return err
	}
	type found struct {
		inv   *testingv1.Invocation
		res   *testingv1.RunResult
		why   []string
		label *testingv1.RunLabel
		at    reviewPosition
	}
	// One run more than the page, to know whether more follow.
	var picked []found
	err = a.recentResults(ctx, q.WorkspaceID, q.AgentID, from, begin, func(inv *testingv1.Invocation, res *testingv1.RunResult, at reviewPosition) (bool, error) {
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
		picked = append(picked, found{inv, res, why, label, at})
		return len(picked) <= q.Limit, nil
	})
	if err != nil {
		return Page[ReviewItem]{}, err
	}
	page := Page[ReviewItem]{Rows: []ReviewItem{}}
	if len(picked) > q.Limit {
		picked, page.HasMore = picked[:q.Limit], true
		if page.NextCursor, err = cursor.Next(a.Cursors, scope, picked[len(picked)-1].at); err != nil {
			return Page[ReviewItem]{}, err
		}
	}
	// The tests' conditions, read once the runs log is no longer held.
	for _, p := range picked {
		pt := p.inv.GetTests()[p.res.GetTestIndex()]
		conds, ok := defs[pt.GetTestStreamSeq()]
		if !ok {
			def, err := a.DefinitionAt(ctx, pt.GetTestStreamSeq())
			if err != nil {
				return Page[ReviewItem]{}, err
			}
			conds = Conditions(def)
			defs[pt.GetTestStreamSeq()] = conds
		}
		page.Rows = append(page.Rows, ReviewItem{Invocation: p.inv, Test: pt, Result: p.res, Conditions: conds, Reasons: p.why, Label: p.label})
	}
	return page, nil
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

// judgedByAModel reports whether a label's verdict was a judge model's:
// a tool test's calls are checked against its expectation, so its label
// measures no judge (labels made before this was kept name the model
// that played the agent).
func judgedByAModel(l *testingv1.RunLabel) bool {
	return l.GetTestType() != domain.TypeTool && l.GetJudgeModel() != ""
}

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
			l.GetLabelledAtUnixMs()/1000 < q.SinceUnix || !judgedByAModel(l) {
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
	err = a.recentResults(ctx, q.WorkspaceID, "", nil, nil, func(inv *testingv1.Invocation, res *testingv1.RunResult, _ reviewPosition) (bool, error) {
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
