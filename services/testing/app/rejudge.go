package app

import (
	"context"
	"sort"
	"strings"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Re-judging a labelled set: before anyone switches judge, the runs people
// labelled are judged again by another judge model, and the report
// compares the two on the same labels. A vote is an event of its own
// (testing.run_rejudged); no run's result is touched.

// RejudgeFilter selects the labelled runs to judge again (each run's
// current label).
type RejudgeFilter struct {
	InvocationID string `json:"invocation_id"`
	TestID       string `json:"test_id"`
	SinceUnix    int64  `json:"since_unix"` // labelled since
}

// RejudgeInput is the body of POST /v1/voiceai/judge/rejudge (its shape is
// the API schema's, checked at the edge).
type RejudgeInput struct {
	JudgeModel string        `json:"judge_model"`
	Filter     RejudgeFilter `json:"filter"`
	Limit      int           `json:"limit"`
}

// MaxRejudge bounds the runs one request judges again (and the time it
// holds the caller).
const MaxRejudge = 200

// RejudgeTarget is a labelled run to judge again: its label, the result
// the label reviewed (whose reply is judged), and its test as the
// invocation pinned it.
type RejudgeTarget struct {
	Label      *testingv1.RunLabel
	Result     *testingv1.RunResult
	Invocation *testingv1.Invocation
	Test       *testingv1.PlannedTest
	Definition domain.TestInput
}

// RejudgeTargets are the labelled runs f selects, most recently labelled
// first, at most limit.
func (a *App) RejudgeTargets(ctx context.Context, ws string, f RejudgeFilter, limit int) ([]RejudgeTarget, error) {
	filter, err := events.RunLabelsOfWorkspace(ws)
	if f.InvocationID != "" {
		if _, err := a.Invocation(ctx, ws, f.InvocationID); err != nil {
			return nil, err
		}
		filter, err = events.RunLabelsOfInvocation(ws, f.InvocationID)
	}
	if err != nil {
		return nil, err
	}
	var labels []*testingv1.RunLabel
	err = a.scan(ctx, ws, filter, a.Runs.EachLast, func(rec Record) error {
		l, err := labelOf(rec)
		if err != nil {
			return err
		}
		if (f.TestID == "" || l.GetTestId() == f.TestID) && l.GetLabelledAtUnixMs()/1000 >= f.SinceUnix {
			labels = append(labels, l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(labels, func(i, j int) bool { return labels[i].GetLabelledAtUnixMs() > labels[j].GetLabelledAtUnixMs() })
	if len(labels) > limit {
		labels = labels[:limit]
	}
	// The results and tests, read once the runs log is no longer held.
	out := make([]RejudgeTarget, 0, len(labels))
	invs := map[string]*testingv1.Invocation{}
	defs := map[uint64]domain.TestInput{}
	for _, l := range labels {
		inv, ok := invs[l.GetInvocationId()]
		if !ok {
			if inv, err = a.Invocation(ctx, ws, l.GetInvocationId()); err != nil {
				if apperr.KindOf(err) == apperr.NotFound {
					continue // expired since it was labelled
				}
				return nil, err
			}
			invs[l.GetInvocationId()] = inv
		}
		rec, err := a.Runs.At(ctx, l.GetResultSeq())
		if err != nil {
			return nil, err
		}
		res, err := runOf(esproto.Decode(rec))
		if err != nil {
			return nil, err
		}
		ti := int(res.GetTestIndex())
		if ti < 0 || ti >= len(inv.GetTests()) {
			continue
		}
		pt := inv.GetTests()[ti]
		def, ok := defs[pt.GetTestStreamSeq()]
		if !ok {
			if def, err = a.DefinitionAt(ctx, pt.GetTestStreamSeq()); err != nil {
				return nil, err
			}
			defs[pt.GetTestStreamSeq()] = def
		}
		out = append(out, RejudgeTarget{Label: l, Result: res, Invocation: inv, Test: pt, Definition: def})
	}
	return out, nil
}

// RecordRejudge stores a vote. Its message id is the re-judging's id, the
// model's and the run's, so a retried request stores each vote once.
func (a *App) RecordRejudge(ctx context.Context, c principal.Caller, v *testingv1.RejudgeVote) error {
	subject, err := events.RejudgeSubject(c.WorkspaceID, v.GetJudgeModel(), v.GetInvocationId(), v.GetRunId())
	if err != nil {
		return err
	}
	meta := esproto.Meta(ctx, c.WorkspaceID, c.CommandID, a.Now())
	ev, err := esproto.Encode(ctx, meta, &testingv1.RunRejudged{Meta: meta, Vote: v})
	if err != nil {
		return err
	}
	id := v.GetRejudgeId() + "#" + events.JudgeModelKey(v.GetJudgeModel()) + "#" + v.GetRunId()
	_, err = a.Runs.Publish(ctx, eventMessage(subject, id, ev))
	return err
}

// RejudgeIDOf is the id of a re-judging requested under commandID: the
// same for a retry with the same Idempotency-Key, a new one without.
func RejudgeIDOf(commandID string) string {
	if commandID == "" {
		return ids.New("rjdg")
	}
	return "rjdg_" + esproto.StableID("rejudge", commandID)
}

// RejudgeVotesByCommand are the votes a request with commandID stored, by
// run id: a retry answers them instead of judging again. A vote's message
// id (RecordRejudge) begins with its re-judging's id, RejudgeIDOf(commandID).
func (a *App) RejudgeVotesByCommand(ctx context.Context, ws, commandID string) (map[string]*testingv1.RejudgeVote, error) {
	filter, err := events.RejudgesOfWorkspace(ws)
	if err != nil {
		return nil, err
	}
	out := map[string]*testingv1.RejudgeVote{}
	if commandID == "" {
		return out, nil
	}
	prefix := RejudgeIDOf(commandID) + "#"
	var seqs []uint64
	err = a.scan(ctx, ws, filter, a.Runs.EachHeader, func(rec Record) error {
		if strings.HasPrefix(rec.CommandID, prefix) {
			seqs = append(seqs, rec.Seq)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, seq := range seqs {
		rec, err := a.Runs.At(ctx, seq)
		if err != nil {
			return nil, err
		}
		ev, err := decodeAs[*testingv1.RunRejudged](rec)
		if err == nil {
			err = esproto.SameRequest(ctx, ev.GetMeta())
		}
		if err != nil {
			return nil, err
		}
		out[ev.GetVote().GetRunId()] = ev.GetVote()
	}
	return out, nil
}

func voteOf(rec Record) (*testingv1.RejudgeVote, error) {
	ev, err := decodeAs[*testingv1.RunRejudged](rec)
	return ev.GetVote(), err
}

// MaxCompared bounds the judge models one report compares.
const MaxCompared = 4

// Comparison is judge models compared on the same labels: the labelled
// runs (each run's current label, the report's filters applying) that
// every model gave a pass or a fail, and each model's figures on them.
type Comparison struct {
	Models []string
	// Runs is the intersection's size: labelled runs every model judged.
	Runs   int64
	Judges []ComparedJudge
}

// ComparedJudge is one model's figures on a comparison's runs.
type ComparedJudge struct {
	JudgeModel string
	Confusion  domain.Confusion
	// Judged counts the labelled runs the model gave a pass or a fail
	// (the intersection's runs and those another model did not judge).
	Judged int64
}

// CompareJudges compares models on the runs people labelled: a model's
// verdict on a run is the run's own when the model judged it, else its
// current re-judge vote (POST /v1/voiceai/judge/rejudge). The truth is
// the run's verdict when its label says right, the other one when it says
// wrong (a label of an unknown verdict says nothing of the truth).
func (a *App) CompareJudges(ctx context.Context, q ReportQuery, models []string) (*Comparison, error) {
	filter, err := events.RunLabelsOfWorkspace(q.WorkspaceID)
	if err != nil {
		return nil, err
	}
	truth := map[string]bool{} // by invocation/run
	verdicts := make([]map[string]string, len(models))
	for i := range verdicts {
		verdicts[i] = map[string]string{}
	}
	err = a.scan(ctx, q.WorkspaceID, filter, a.Runs.EachLast, func(rec Record) error {
		l, err := labelOf(rec)
		if err != nil {
			return err
		}
		judged := l.GetJudgedResult()
		if (q.TestID != "" && l.GetTestId() != q.TestID) || l.GetLabelledAtUnixMs()/1000 < q.SinceUnix ||
			(judged != domain.ConditionSuccess && judged != domain.ConditionFailure) || !judgedByAModel(l) {
			return nil
		}
		key := l.GetInvocationId() + "/" + l.GetRunId()
		truth[key] = (judged == domain.ConditionSuccess) == l.GetVerdictCorrect()
		for i, m := range models {
			if l.GetJudgeModel() == m {
				verdicts[i][key] = judged
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, m := range models {
		filter, err := events.RejudgesOfModel(q.WorkspaceID, m)
		if err != nil {
			return nil, err
		}
		err = a.scan(ctx, q.WorkspaceID, filter, a.Runs.EachLast, func(rec Record) error {
			v, err := voteOf(rec)
			if err != nil {
				return err
			}
			key := v.GetInvocationId() + "/" + v.GetRunId()
			if _, own := verdicts[i][key]; !own && v.GetJudgeModel() == m {
				verdicts[i][key] = v.GetResult()
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := &Comparison{Models: models, Judges: make([]ComparedJudge, len(models))}
	for i, m := range models {
		out.Judges[i].JudgeModel = m
	}
	decided := func(r string) bool { return r == domain.ConditionSuccess || r == domain.ConditionFailure }
	for key, passed := range truth {
		all := true
		for i := range models {
			r := verdicts[i][key]
			if decided(r) {
				out.Judges[i].Judged++
			} else {
				all = false
			}
		}
		if !all {
			continue
		}
		out.Runs++
		for i := range models {
			out.Judges[i].Confusion.Add(verdicts[i][key] == domain.ConditionSuccess, passed)
		}
	}
	return out, nil
}
