package adapters

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

func verdictRecord(t *testing.T, seq uint64, typ string, ev proto.Message) eventstore.Record {
	t.Helper()
	b, err := proto.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.Record{Seq: seq, Type: typ, Data: b}
}

// project applies rec to coll as the projector does.
func project(t *testing.T, coll *mongo.Collection, h projection.Handler, rec eventstore.Record) {
	t.Helper()
	id, doc, err := h(context.Background(), rec)
	if err != nil || id == "" {
		t.Fatalf("handler: %q %v", id, err)
	}
	if _, err := projection.Upsert(context.Background(), coll, id, rec.Seq, doc); err != nil {
		t.Fatal(err)
	}
}

// The projections keep each conversation's newest analysis and each run's
// and conversation's newest label; a read looks labels up by what they
// name, in the order asked, within the workspace.
func TestVerdictProjections(t *testing.T) {
	ctx := context.Background()
	v := OpenVerdicts(testenv.New(t).Mongo(t).Database("tickets_verdicts"))
	analysis := func(id, result string) *testingv1.ConversationAnalysed {
		return &testingv1.ConversationAnalysed{Analysis: &testingv1.ConversationAnalysis{AnalysisId: id, WorkspaceId: "ws", ConversationId: "conv_1",
			AgentId: "agent_1", CallSuccessful: result, Judge: &testingv1.ModelUsage{Provider: "openai", Model: "gpt-4o"}, AnalysedAtUnixMs: 5000,
			Criteria: []*testingv1.CriterionVerdict{{Id: "hours", Name: "Hours", Result: result, Rationale: "why"}}}}
	}
	// An analysis recorded before sealing is read as it stands, a sealed
	// one opened under its conversation's key.
	convKeys := convseal.NewMemoryKeys()
	project(t, v.AnalysesColl, AnalysisHandler(convKeys), verdictRecord(t, 1, events.TypeConversationAnalysed, analysis("cana_1", "success")))
	project(t, v.AnalysesColl, AnalysisHandler(convKeys), verdictRecord(t, 3, events.TypeConversationAnalysed, sealedAnalysis(t, convKeys, analysis("cana_2", "failure"))))
	an, err := v.Analysis(ctx, "ws", "conv_1")
	if err != nil || an == nil || an.AnalysisID != "cana_2" || an.JudgeModel != "gpt-4o" || an.AnalysedAtMs != 5000 ||
		len(an.Criteria) != 1 || an.Criteria[0].Result != "failure" || an.Criteria[0].Rationale != "why" {
		t.Fatalf("analysis: %+v %v", an, err)
	}
	if an, err := v.Analysis(ctx, "other", "conv_1"); an != nil || err != nil {
		t.Fatalf("another workspace's analysis: %+v %v", an, err)
	}

	runLabel := func(id string, correct bool) *testingv1.RunLabelled {
		return &testingv1.RunLabelled{Label: &testingv1.RunLabel{LabelId: id, WorkspaceId: "ws", InvocationId: "tinv_1", RunId: "trun_1_0",
			TestName: "Hours", JudgeModel: "gpt-4o", JudgedResult: "failure", VerdictCorrect: correct, ReviewerUserId: "u1", LabelledAtUnixMs: 7000,
			Criteria: []*testingv1.CriterionLabel{{Id: "condition_0", Correct: correct, Text: "states the hours"}}}}
	}
	project(t, v.LabelsColl, LabelHandler(convKeys), verdictRecord(t, 2, events.TypeRunLabelled, runLabel("rlbl_1", true)))
	project(t, v.LabelsColl, LabelHandler(convKeys), verdictRecord(t, 4, events.TypeRunLabelled, runLabel("rlbl_2", false)))
	// A conversation label's note is sealed under the conversation's key.
	note, err := convseal.SealAs(ctx, convKeys, convseal.KindLabelNote, "ws", "conv_1", []byte("right"))
	if err != nil {
		t.Fatal(err)
	}
	project(t, v.LabelsColl, LabelHandler(convKeys), verdictRecord(t, 5, events.TypeConversationLabelled, &testingv1.ConversationLabelled{
		SealedNote: note, Label: &testingv1.ConversationLabel{LabelId: "clbl_1", WorkspaceId: "ws", ConversationId: "conv_1", JudgeModel: "gpt-4o",
			JudgedResult: "failure", VerdictCorrect: true}}))
	keys := []app.LabelKey{{Kind: app.LabelOfConversation, ConversationID: "conv_1"}, {Kind: app.LabelOfRun, InvocationID: "tinv_1", RunID: "trun_1_1"},
		{Kind: app.LabelOfRun, InvocationID: "tinv_1", RunID: "trun_1_0"}}
	for _, how := range []mongox.Lookup{mongox.OneQuery, mongox.EachByID} {
		v.LabelsLookup = how
		labels, err := v.Labels(ctx, "ws", keys)
		if err != nil || len(labels) != 2 {
			t.Fatalf("labels (each by id %v): %+v %v", how, labels, err)
		}
		if l := labels[0]; l.Kind != app.LabelOfConversation || l.LabelID != "clbl_1" || l.Note != "right" {
			t.Fatalf("the conversation's label (each by id %v): %+v", how, l)
		}
		if l := labels[1]; l.Kind != app.LabelOfRun || l.LabelID != "rlbl_2" || l.VerdictCorrect || l.Reviewer.UserID != "u1" ||
			len(l.Criteria) != 1 || l.Criteria[0].Text != "states the hours" {
			t.Fatalf("the run's current label (each by id %v): %+v", how, l)
		}
		if labels, err := v.Labels(ctx, "other", keys); err != nil || len(labels) != 0 {
			t.Fatalf("another workspace's labels (each by id %v): %+v %v", how, labels, err)
		}
	}
	// Other events of the stream are skipped.
	if id, _, err := LabelHandler(convKeys)(ctx, verdictRecord(t, 6, events.TypeRunCompleted, &testingv1.RunCompleted{})); id != "" || err != nil {
		t.Fatalf("a run result: %q %v", id, err)
	}
}

// A deleted conversation's analysis and label stay gone when a projector
// that judged the conversation not deleted a moment before writes them
// after the deletion: the deletion leaves tombstones no event passes
// (found by a read-only audit; a plain delete let the write land).
func TestADeletedConversationsVerdictsAreNotWrittenBack(t *testing.T) {
	ctx := context.Background()
	v := OpenVerdicts(testenv.New(t).Mongo(t).Database("tickets_verdicts_deleted"))
	analysis := &testingv1.ConversationAnalysed{Analysis: &testingv1.ConversationAnalysis{AnalysisId: "cana_1", WorkspaceId: "ws", ConversationId: "conv_1",
		AgentId: "agent_1", CallSuccessful: "failure", TranscriptSummary: "the caller's card number was read out"}}
	label := &testingv1.ConversationLabelled{Label: &testingv1.ConversationLabel{LabelId: "clbl_1", WorkspaceId: "ws", ConversationId: "conv_1", Note: "private"}}
	project(t, v.AnalysesColl, AnalysisHandler(convseal.NewMemoryKeys()), verdictRecord(t, 1, events.TypeConversationAnalysed, analysis))
	if err := v.ForgetConversation(ctx, "ws", "conv_1"); err != nil {
		t.Fatal(err)
	}
	// The racing projector's writes, after the deletion.
	id, doc, err := AnalysisHandler(convseal.NewMemoryKeys())(ctx, verdictRecord(t, 7, events.TypeConversationAnalysed, analysis))
	if err != nil {
		t.Fatal(err)
	}
	if applied, err := projection.Upsert(ctx, v.AnalysesColl, id, 7, doc); err != nil || applied {
		t.Fatalf("an analysis written over the deleted conversation's tombstone: applied %v, %v", applied, err)
	}
	id, doc, err = LabelHandler(convseal.NewMemoryKeys())(ctx, verdictRecord(t, 8, events.TypeConversationLabelled, label))
	if err != nil {
		t.Fatal(err)
	}
	if applied, err := projection.Upsert(ctx, v.LabelsColl, id, 8, doc); err != nil || applied {
		t.Fatalf("a label written over the deleted conversation's tombstone: applied %v, %v", applied, err)
	}
	if an, err := v.Analysis(ctx, "ws", "conv_1"); an != nil || err != nil {
		t.Fatalf("the deleted conversation's analysis is back: %+v %v", an, err)
	}
	if labels, err := v.Labels(ctx, "ws", []app.LabelKey{{Kind: app.LabelOfConversation, ConversationID: "conv_1"}}); err != nil || len(labels) != 0 {
		t.Fatalf("the deleted conversation's label is back: %+v %v", labels, err)
	}
}

// sealedAnalysis is ev as the testing service records it: the analysis
// sealed under its conversation's key, its ids alone in the clear.
func sealedAnalysis(t *testing.T, keys convseal.Keys, ev *testingv1.ConversationAnalysed) *testingv1.ConversationAnalysed {
	t.Helper()
	an := ev.GetAnalysis()
	sealed, err := convseal.SealMessage(context.Background(), keys, convseal.KindAnalysis, an.GetWorkspaceId(), an.GetConversationId(), an)
	if err != nil {
		t.Fatal(err)
	}
	return &testingv1.ConversationAnalysed{Meta: ev.GetMeta(), SealedAnalysis: sealed, Analysis: &testingv1.ConversationAnalysis{
		AnalysisId: an.GetAnalysisId(), WorkspaceId: an.GetWorkspaceId(), ConversationId: an.GetConversationId(), AgentId: an.GetAgentId()}}
}

// A sealed analysis, or a label's sealed note, is projected while its
// conversation's key opens it; once the conversation is deleted (the key
// destroyed), or where the sealed bytes were changed, the projector skips
// it rather than stall.
func TestSealedAnalysesAreSkippedOnceShredded(t *testing.T) {
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	h := AnalysisHandler(keys)
	ev := sealedAnalysis(t, keys, &testingv1.ConversationAnalysed{Analysis: &testingv1.ConversationAnalysis{AnalysisId: "cana_1",
		WorkspaceId: "ws", ConversationId: "conv_1", TranscriptSummary: "the caller read out a card number"}})
	id, doc, err := h(ctx, verdictRecord(t, 1, events.TypeConversationAnalysed, ev))
	if err != nil || id != "ws/conv_1" || doc.(AnalysisDoc).TranscriptSummary != "the caller read out a card number" {
		t.Fatalf("a sealed analysis: %q %+v %v", id, doc, err)
	}
	changed := proto.Clone(ev).(*testingv1.ConversationAnalysed)
	changed.SealedAnalysis[len(changed.SealedAnalysis)-1] ^= 1
	if id, _, err := h(ctx, verdictRecord(t, 2, events.TypeConversationAnalysed, changed)); id != "" || err != nil {
		t.Fatalf("a changed sealed analysis: %q %v", id, err)
	}
	note, err := convseal.SealAs(ctx, keys, convseal.KindLabelNote, "ws", "conv_1", []byte("they read out the card"))
	if err != nil {
		t.Fatal(err)
	}
	label := &testingv1.ConversationLabelled{SealedNote: note, Label: &testingv1.ConversationLabel{LabelId: "clbl_1", WorkspaceId: "ws", ConversationId: "conv_1"}}
	if id, doc, err := LabelHandler(keys)(ctx, verdictRecord(t, 3, events.TypeConversationLabelled, label)); err != nil || id == "" ||
		doc.(LabelDoc).Note != "they read out the card" {
		t.Fatalf("a label with a sealed note: %q %+v %v", id, doc, err)
	}
	if err := keys.Shred(ctx, "ws", "conv_1"); err != nil {
		t.Fatal(err)
	}
	if id, _, err := h(ctx, verdictRecord(t, 1, events.TypeConversationAnalysed, ev)); id != "" || err != nil {
		t.Fatalf("after the conversation's deletion: %q %v", id, err)
	}
	if id, _, err := LabelHandler(keys)(ctx, verdictRecord(t, 3, events.TypeConversationLabelled, label)); id != "" || err != nil {
		t.Fatalf("a label after the conversation's deletion: %q %v", id, err)
	}
}
