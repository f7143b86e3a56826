package app_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Rule tests of the review reads (re-judged votes and analyses replayed by
// command id, conversation labels, criterion ids) and of the small read
// rules (a pending group, an unrun run's status, an event's state).

// as is w's caller retrying under an Idempotency-Key (commandID).
func (w *world) as(commandID string) principal.Caller {
	c := w.c
	c.CommandID = commandID
	return c
}

// A retried re-judging answers the votes its first request stored, by
// run id: not another request's, nor another workspace's under the same
// key. The request names its votes' re-judging by its command id
// (RejudgeIDOf), as the port does.
func TestRejudgeVotesByCommandAnswersTheFirstRequestsVotes(t *testing.T) {
	w := newWorld(t)
	other := w.inWorkspace("ws_other")
	ctx := context.Background()
	record := w.recordRejudge
	record(w.as("cmd_1"), "model-a", "tinv_1", "trun_1_0", domain.ConditionSuccess)
	record(w.as("cmd_1"), "model-a", "tinv_1", "trun_1_1", domain.ConditionFailure)
	record(w.as("cmd_2"), "model-a", "tinv_1", "trun_1_2", domain.ConditionSuccess)
	record(other.as("cmd_1"), "model-a", "tinv_9", "trun_9_0", domain.ConditionSuccess)
	record(w.c, "model-a", "tinv_1", "trun_1_3", domain.ConditionSuccess) // no key

	got, err := w.a.RejudgeVotesByCommand(ctx, "ws", "cmd_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["trun_1_0"].GetResult() != domain.ConditionSuccess || got["trun_1_1"].GetResult() != domain.ConditionFailure {
		t.Fatalf("cmd_1's votes: %v; want runs 0 (success) and 1 (failure)", got)
	}
	if got, _ := w.a.RejudgeVotesByCommand(ctx, "ws", "cmd_3"); len(got) != 0 {
		t.Fatalf("a key never used answered %v", got)
	}
}

// recordRejudge stores a vote as the re-judging port does for caller.
func (w *world) recordRejudge(c principal.Caller, model, inv, run, result string) {
	w.t.Helper()
	id := app.RejudgeIDOf(c.CommandID)
	v := &testingv1.RejudgeVote{RejudgeId: id, WorkspaceId: c.WorkspaceID, InvocationId: inv, RunId: run, JudgeModel: model, Result: result}
	if err := w.a.RecordRejudge(context.Background(), c, v); err != nil {
		w.t.Fatal(err)
	}
}

// A re-judging's id is stable under a key, new without one.
func TestRejudgeIDOf(t *testing.T) {
	if a, b := app.RejudgeIDOf("cmd_1"), app.RejudgeIDOf("cmd_1"); a != b || !strings.HasPrefix(a, "rjdg_") {
		t.Fatalf("under one key: %q and %q", a, b)
	}
	if a, b := app.RejudgeIDOf("cmd_1"), app.RejudgeIDOf("cmd_2"); a == b {
		t.Fatalf("two keys share %q", a)
	}
	if a, b := app.RejudgeIDOf(""), app.RejudgeIDOf(""); a == b || !strings.HasPrefix(a, "rjdg_") {
		t.Fatalf("without a key: %q and %q", a, b)
	}
}

// An analysis id is new each time, prefixed cana_.
func TestNewAnalysisID(t *testing.T) {
	a, b := app.NewAnalysisID(), app.NewAnalysisID()
	if a == b || !strings.HasPrefix(a, "cana_") || !strings.HasPrefix(b, "cana_") {
		t.Fatalf("analysis ids %q and %q", a, b)
	}
}

// AnalysisByCommand answers the analysis a command stored for that
// conversation, and nothing for another command or conversation; the
// command's key sent for another conversation records nothing there (the
// runs log keeps a message id once, so it would otherwise be answered as
// stored when it was not) and is refused as another request's.
func TestAnalysisByCommand(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	store := func(c principal.Caller, conv string) *testingv1.ConversationAnalysis {
		t.Helper()
		an := &testingv1.ConversationAnalysis{AnalysisId: app.NewAnalysisID(), WorkspaceId: c.WorkspaceID, ConversationId: conv,
			AgentId: agentID, CallSuccessful: domain.ConditionSuccess}
		stored, err := w.a.RecordAnalysis(ctx, c, an)
		if err != nil {
			t.Fatal(err)
		}
		return stored
	}
	first := store(w.as("cmd_1"), "conv_1")
	store(w.as("cmd_2"), "conv_1")
	_, err := w.a.RecordAnalysis(ctx, w.as("cmd_1"), &testingv1.ConversationAnalysis{AnalysisId: app.NewAnalysisID(), WorkspaceId: "ws",
		ConversationId: "conv_2", AgentId: agentID, CallSuccessful: domain.ConditionSuccess})
	var v apperr.ValidationErrors
	if !errors.As(err, &v) || v[0].Type != "idempotency_key_reused" {
		t.Fatalf("cmd_1 sent for conv_2: %v, want the key refused as another request's", err)
	}
	for _, tc := range []struct {
		conv, cmd string
		want      string // analysis id, "" for none
	}{
		{"conv_1", "cmd_1", first.GetAnalysisId()},
		{"conv_1", "cmd_3", ""},
		{"conv_2", "cmd_1", ""},
		{"conv_3", "cmd_1", ""},
		{"conv.bad", "cmd_1", ""}, // no subject names it
	} {
		an, found, err := w.a.AnalysisByCommand(ctx, "ws", tc.conv, tc.cmd)
		if err != nil || found != (tc.want != "") || an.GetAnalysisId() != tc.want {
			t.Fatalf("%s under %s: %v, found %v, %v; want %q", tc.conv, tc.cmd, an.GetAnalysisId(), found, err, tc.want)
		}
	}
}

// An analysis holds what the conversation said, so the runs log keeps it
// sealed under the conversation's key (and a label's note with it): no
// byte of the record holds its summary, the judge's reasons or the note,
// the app opens them, and once the conversation is deleted (its key
// destroyed) they are gone for every read and nothing more is recorded.
func TestAnalysesAreSealedUnderTheirConversationsKey(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	w.a.ConversationKeys = keys
	const summary, rationale = "The caller gave card number 4111 1111", "The agent repeated the card number back"
	c := w.as("cmd_seal")
	an := &testingv1.ConversationAnalysis{AnalysisId: "cana_sealed", WorkspaceId: "ws", ConversationId: "conv_1", AgentId: agentID,
		CallSuccessful: domain.ConditionFailure, TranscriptSummary: summary,
		Criteria: []*testingv1.CriterionVerdict{{Id: "privacy", Name: "Privacy", Result: domain.ConditionFailure, Rationale: rationale}}}
	if stored, err := w.a.RecordAnalysis(ctx, c, an); err != nil || stored.GetTranscriptSummary() != summary {
		t.Fatalf("record: %v %v", stored, err)
	}
	subject, _ := events.ConversationAnalysisSubject("ws", "conv_1")
	rec, found, err := w.a.Runs.Last(ctx, subject)
	if err != nil || !found {
		t.Fatalf("the stored record: %v %v", found, err)
	}
	for _, text := range []string{"4111", "repeated the card"} {
		if bytes.Contains(rec.Data, []byte(text)) {
			t.Fatalf("the runs log holds %q in the clear", text)
		}
	}
	current, _, found, err := w.a.CurrentAnalysis(ctx, "ws", "conv_1")
	if err != nil || !found || current.GetTranscriptSummary() != summary || current.GetCriteria()[0].GetRationale() != rationale {
		t.Fatalf("the current analysis: %v %v %v", current, found, err)
	}
	if again, err := w.a.RecordAnalysis(ctx, c, &testingv1.ConversationAnalysis{AnalysisId: "cana_retry", WorkspaceId: "ws",
		ConversationId: "conv_1", AgentId: agentID}); err != nil || again.GetAnalysisId() != "cana_sealed" || again.GetTranscriptSummary() != summary {
		t.Fatalf("a retry under the same key answers %v, %v; want the first, opened", again, err)
	}

	// A reviewer's note is sealed the same way; the verdicts stay clear.
	const note = "They read the card 4111 1111 back to the caller"
	if l, err := w.a.LabelConversation(ctx, w.as("cmd_label"), "conv_1", app.LabelInput{VerdictCorrect: yes(), Note: note}); err != nil || l.GetNote() != note {
		t.Fatalf("label: %v %v", l, err)
	}
	labelSubject, _ := events.ConversationLabelSubject("ws", "conv_1")
	if rec, found, err := w.a.Runs.Last(ctx, labelSubject); err != nil || !found || bytes.Contains(rec.Data, []byte("4111")) ||
		!bytes.Contains(rec.Data, []byte(domain.ConditionFailure)) {
		t.Fatalf("the label's record (found %v, %v) holds the note in the clear, or not its verdict", found, err)
	}
	if l, err := w.a.LabelConversation(ctx, w.as("cmd_label"), "conv_1", app.LabelInput{VerdictCorrect: yes()}); err != nil || l.GetNote() != note {
		t.Fatalf("a retried label answers %v, %v; want the first, its note opened", l, err)
	}
	if ls, err := w.a.ConversationLabels(ctx, w.c, "conv_1"); err != nil || len(ls) != 1 || ls[0].GetNote() != note {
		t.Fatalf("the labels: %v %v", ls, err)
	}

	if err := keys.Shred(ctx, "ws", "conv_1"); err != nil {
		t.Fatal(err)
	}
	if ls, err := w.a.ConversationLabels(ctx, w.c, "conv_1"); !errors.Is(err, apperr.ConversationUnknown) {
		t.Fatalf("after the delete, the labels: %v %v; want conversation_not_found", ls, err)
	}
	if an, _, found, err := w.a.CurrentAnalysis(ctx, "ws", "conv_1"); err != nil || found || an != nil {
		t.Fatalf("after the delete, the current analysis: %v %v %v", an, found, err)
	}
	if an, found, err := w.a.AnalysisByCommand(ctx, "ws", "conv_1", "cmd_seal"); err != nil || found || an != nil {
		t.Fatalf("after the delete, the command's analysis: %v %v %v", an, found, err)
	}
	if _, err := w.a.RecordAnalysis(ctx, w.as("cmd_after"), &testingv1.ConversationAnalysis{AnalysisId: "cana_after", WorkspaceId: "ws",
		ConversationId: "conv_1", AgentId: agentID, TranscriptSummary: summary}); !errors.Is(err, apperr.ConversationUnknown) {
		t.Fatalf("an analysis recorded after the delete: %v, want conversation_not_found", err)
	}

	// A process without the keys records no analysis (rather than one in
	// the clear).
	w.a.ConversationKeys = nil
	if _, err := w.a.RecordAnalysis(ctx, w.as("cmd_nokeys"), &testingv1.ConversationAnalysis{AnalysisId: "cana_nokeys", WorkspaceId: "ws",
		ConversationId: "conv_2", AgentId: agentID}); !errors.Is(err, apperr.ServiceUnavailable) {
		t.Fatalf("without keys: %v, want service_unavailable", err)
	}
}

// A conversation's labels are listed oldest first; a conversation
// analysed but never labelled has none, and an unknown one is a 404.
func TestConversationLabels(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.a.Conversations = conversations{"conv_known": nil}
	an := &testingv1.ConversationAnalysis{AnalysisId: "cana_1", WorkspaceId: "ws", ConversationId: "conv_1", AgentId: agentID,
		CallSuccessful: domain.ConditionFailure}
	if _, err := w.a.RecordAnalysis(ctx, w.c, an); err != nil {
		t.Fatal(err)
	}
	if got, err := w.a.ConversationLabels(ctx, w.c, "conv_1"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("an analysed conversation without labels: %v, %v; want an empty list", got, err)
	}
	var notes []string
	for _, note := range []string{"first", "second"} {
		if _, err := w.a.LabelConversation(ctx, w.c, "conv_1", app.LabelInput{VerdictCorrect: yes(), Note: note}); err != nil {
			t.Fatal(err)
		}
		notes = append(notes, note)
	}
	got, err := w.a.ConversationLabels(ctx, w.c, "conv_1")
	if err != nil || len(got) != 2 || got[0].GetNote() != notes[0] || got[1].GetNote() != notes[1] {
		t.Fatalf("labels %v, %v; want %v, oldest first", got, err, notes)
	}
	if got, err := w.a.ConversationLabels(ctx, w.c, "conv_known"); err != nil || len(got) != 0 {
		t.Fatalf("a recorded conversation never analysed: %v, %v; want an empty list", got, err)
	}
	for _, conv := range []string{"conv_unknown", "conv.bad"} {
		if _, err := w.a.ConversationLabels(ctx, w.c, conv); !errors.Is(err, apperr.ConversationUnknown) {
			t.Fatalf("labels of %s: %v; want conversation unknown", conv, err)
		}
	}
	other := w.inWorkspace("ws_other")
	if _, err := other.a.ConversationLabels(ctx, other.c, "conv_1"); !errors.Is(err, apperr.ConversationUnknown) {
		t.Fatalf("another workspace's conversation: %v; want conversation unknown", err)
	}
}

// CriterionID(i) names a test's i-th success condition in a run's label:
// its success_condition first, then its success_conditions; an id past
// them is refused.
func TestCriterionIDNamesTheTestsConditionsInOrder(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	test, err := w.a.CreateTest(ctx, w.c, []byte(`{"type":"llm","name":"Refunds","success_condition":"offers a refund",`+
		`"success_conditions":["stays polite","names the policy"]}`))
	if err != nil {
		t.Fatal(err)
	}
	w.test = test.GetTestId()
	inv := w.run(1).GetInvocationId()
	w.judged(inv, 0, domain.RunPassed, domain.ConditionSuccess)
	want := []string{"offers a refund", "stays polite", "names the policy"}
	in := app.LabelInput{VerdictCorrect: yes()}
	for i := range want {
		in.Criteria = append(in.Criteria, app.CriterionLabelInput{ID: app.CriterionID(i), Correct: yes()})
	}
	l, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, cr := range l.GetCriteria() {
		if cr.GetId() != app.CriterionID(i) || cr.GetText() != want[i] {
			t.Fatalf("criterion %d: %s %q; want %s %q", i, cr.GetId(), cr.GetText(), app.CriterionID(i), want[i])
		}
	}
	past := app.LabelInput{VerdictCorrect: yes(), Criteria: []app.CriterionLabelInput{{ID: app.CriterionID(len(want)), Correct: yes()}}}
	if _, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), past); apperr.KindOf(err) != apperr.Invalid {
		t.Fatalf("criterion %s of a test with %d conditions: %v; want refused", app.CriterionID(len(want)), len(want), err)
	}
}

// A test's pending group is one pending bucket of all its runs (test i's
// repeat_count runs, in order), named after the planned test.
func TestPendingGroupHoldsEveryRunOfTheTest(t *testing.T) {
	inv := &testingv1.Invocation{InvocationId: "tinv_p", RepeatCount: 3, Tests: []*testingv1.PlannedTest{
		{TestId: "test_a", TestName: "A"}, {TestId: "test_b", TestName: "B", WorkflowNodeId: "node_2"}}}
	g := app.PendingGroup(inv, 1)
	if g.GetTestId() != "test_b" || g.GetTestName() != "B" || g.GetWorkflowNodeId() != "node_2" || g.GetTestIndex() != 1 || len(g.GetBuckets()) != 1 {
		t.Fatalf("group %v", g)
	}
	b := g.GetBuckets()[0]
	want := []string{domain.RunID("tinv_p", 3), domain.RunID("tinv_p", 4), domain.RunID("tinv_p", 5)}
	if b.GetStatus() != domain.RunPending || strings.Join(b.GetTestRunIds(), ",") != strings.Join(want, ",") || b.GetTitle() == "" {
		t.Fatalf("bucket %v; want pending with runs %v", b, want)
	}
	// Without repeat_count, a test has its one run.
	if ids := app.PendingGroup(&testingv1.Invocation{InvocationId: "tinv_p", Tests: inv.GetTests()}, 1).GetBuckets()[0].GetTestRunIds(); len(ids) != 1 || ids[0] != domain.RunID("tinv_p", 1) {
		t.Fatalf("a run once: %v", ids)
	}
}

// A run without a result is pending while it may still run: cancelled
// once its invocation is cancelled or completed, or when a resubmission
// is running that does not name it.
func TestUnrunStatusRules(t *testing.T) {
	resubmitted := []*testingv1.Resubmission{{Attempt: 2, RunIds: []string{"trun_i_0"}}}
	for _, tc := range []struct {
		status        string
		resubmissions []*testingv1.Resubmission
		inLatest      bool
		want          string
	}{
		{domain.InvocationRunning, nil, false, domain.RunPending},
		{domain.InvocationRunning, nil, true, domain.RunPending},
		{domain.InvocationCancelled, nil, true, domain.RunCancelled},
		{domain.InvocationCompleted, nil, false, domain.RunCancelled},
		{domain.InvocationCompleted, resubmitted, true, domain.RunCancelled},
		{domain.InvocationRunning, resubmitted, true, domain.RunPending},
		{domain.InvocationRunning, resubmitted, false, domain.RunCancelled},
	} {
		inv := &testingv1.Invocation{Status: tc.status, Resubmissions: tc.resubmissions}
		if got := app.UnrunStatus(inv, tc.inLatest); got != tc.want {
			t.Errorf("%s, %d resubmissions, in the latest round %v: %s; want %s", tc.status, len(tc.resubmissions), tc.inLatest, got, tc.want)
		}
	}
}

// StateOf is the test, folder or invocation a TESTING event carries, and
// nil for an event carrying none of them.
func TestStateOfATestingEvent(t *testing.T) {
	test, folder, inv := &testingv1.Test{TestId: "test_1"}, &testingv1.Folder{FolderId: "fld_1"}, &testingv1.Invocation{InvocationId: "tinv_1"}
	for _, tc := range []struct {
		event proto.Message
		want  proto.Message
	}{
		{&testingv1.TestCreated{Test: test}, test},
		{&testingv1.FolderCreated{Folder: folder}, folder},
		{&testingv1.InvocationCreated{Invocation: inv}, inv},
		{&testingv1.InvocationCancelled{Invocation: inv}, inv},
		{&testingv1.RunCompleted{Run: &testingv1.RunResult{RunId: "trun_1_0"}}, nil},
	} {
		got := app.StateOf(tc.event)
		if (got == nil) != (tc.want == nil) || (got != nil && !proto.Equal(got, tc.want)) {
			t.Errorf("state of %T: %v; want %v", tc.event, got, tc.want)
		}
	}
}

// countedRuns is a runs log that counts the records its EachLast hands out.
type countedRuns struct {
	app.RunsLog
	read int
}

func (c *countedRuns) EachLast(ctx context.Context, filter string, fn func(app.Record) error) error {
	return c.RunsLog.EachLast(ctx, filter, func(r app.Record) error { c.read++; return fn(r) })
}

// The review queue stops reading once it has its page: a page of one run
// of an invocation of 40 failed runs reads two results (its run, and the
// next, which says more follow), not all 40.
func TestReviewQueueStopsReadingAtItsLimit(t *testing.T) {
	w := newWorld(t)
	inv := w.run(40).GetInvocationId()
	for i := range 40 {
		w.judged(inv, i, domain.RunFailed, domain.ConditionFailure)
	}
	runs := &countedRuns{RunsLog: w.a.Runs}
	w.a.Runs = runs
	page, err := w.a.ReviewQueue(context.Background(), app.ReviewQuery{WorkspaceID: "ws", Limit: 1}, "")
	if err != nil || len(page.Rows) != 1 || !page.HasMore {
		t.Fatalf("review queue: %d items (more: %v), %v; want 1 and more", len(page.Rows), page.HasMore, err)
	}
	// The labels' read (CurrentLabels) finds none; the results' read
	// stops at its second.
	if runs.read != 2 {
		t.Fatalf("%d records read for a page of 1; want 2", runs.read)
	}
}

// The review queue is read a page at a time with a signed cursor: its
// pages, one after another, are the queue read at once, over the same
// recent invocations (ReviewInvocations of them, though no page reads
// them all); a run labelled meanwhile leaves the queue without moving
// the others; a cursor serves only the query it was made for.
func TestReviewQueuePagesWithACursor(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	oldest := w.ranEarlier(2, passEven)
	for range app.ReviewInvocations {
		w.ranEarlier(2, passEven)
	}
	ids := func(items []app.ReviewItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Result.GetRunId())
		}
		return out
	}
	q := app.ReviewQuery{WorkspaceID: "ws", Limit: 100, SamplePerMille: 1000}
	whole, err := w.a.ReviewQueue(ctx, q, "")
	if err != nil || whole.HasMore || whole.NextCursor != nil || len(whole.Rows) != 2*app.ReviewInvocations {
		t.Fatalf("the queue at once: %d runs (more %v), %v; want every run of the %d newest invocations", len(whole.Rows), whole.HasMore, err, app.ReviewInvocations)
	}
	for _, it := range whole.Rows {
		if it.Invocation.GetInvocationId() == oldest.GetInvocationId() {
			t.Fatalf("the queue reads past its %d newest invocations: %s", app.ReviewInvocations, it.Result.GetRunId())
		}
	}

	pages := func(q app.ReviewQuery, between func(page int)) []string {
		t.Helper()
		var got []string
		token := ""
		for page := 0; ; page++ {
			p, err := w.a.ReviewQueue(ctx, q, token)
			if err != nil || len(p.Rows) > q.Limit {
				t.Fatalf("page %d: %d runs, %v", page, len(p.Rows), err)
			}
			got = append(got, ids(p.Rows)...)
			if !p.HasMore {
				if p.NextCursor != nil {
					t.Fatalf("the last page has a cursor")
				}
				return got
			}
			if p.NextCursor == nil || len(p.Rows) != q.Limit {
				t.Fatalf("page %d of %d runs, more after it, has no cursor", page, len(p.Rows))
			}
			token = *p.NextCursor
			if between != nil {
				between(page)
			}
		}
	}
	q.Limit = 3
	if got := pages(q, nil); !slices.Equal(got, ids(whole.Rows)) {
		t.Fatalf("pages of 3:\n%v\nthe queue at once:\n%v", got, ids(whole.Rows))
	}

	// A run of the second page labelled after the first is read: the
	// second page goes on after the first without it.
	labelled := whole.Rows[4]
	want := slices.Delete(ids(whole.Rows), 4, 5)
	got := pages(q, func(page int) {
		if page == 0 {
			if _, err := w.a.LabelRun(ctx, w.c, labelled.Invocation.GetInvocationId(), labelled.Result.GetRunId(), app.LabelInput{VerdictCorrect: yes()}); err != nil {
				t.Fatal(err)
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Fatalf("pages with a run labelled meanwhile:\n%v\nwant\n%v", got, want)
	}

	// A cursor of another query, or another workspace, is refused.
	first, err := w.a.ReviewQueue(ctx, q, "")
	if err != nil || first.NextCursor == nil {
		t.Fatalf("first page: %v", err)
	}
	other := w.inWorkspace("ws_other")
	for name, o := range map[string]app.ReviewQuery{
		"sample":          {WorkspaceID: "ws", Limit: 3, SamplePerMille: 0},
		"labelled kept":   {WorkspaceID: "ws", Limit: 3, SamplePerMille: 1000, IncludeLabelled: true},
		"agent":           {WorkspaceID: "ws", Limit: 3, SamplePerMille: 1000, AgentID: "agent_other"},
		"other workspace": {WorkspaceID: "ws_other", Limit: 3, SamplePerMille: 1000},
	} {
		var v apperr.ValidationErrors
		if _, err := other.a.ReviewQueue(ctx, o, *first.NextCursor); !errors.As(err, &v) || len(v) != 1 || !slices.Equal(v[0].Loc, []any{"query", "cursor"}) {
			t.Fatalf("the cursor with another query (%s): %v", name, err)
		}
	}
	if _, err := w.a.ReviewQueue(ctx, q, "not-a-cursor"); err == nil {
		t.Fatal("a forged cursor was accepted")
	}
}
