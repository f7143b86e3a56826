package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

const t0 = 1_700_000_000 // conv_1's start

// calls are ws_a's conversations beside conv_1, started later in order
// (so listed first, conv_4 newest), and each told apart by some filter.
var calls = []call{
	{ws: "ws_a", id: "conv_2", agent: "agent_2", start: t0 + 100, secs: 300, outcome: "failure", tools: []string{"refund"}, errs: []string{"refund"},
		words: "Refund denied, sorry", data: map[string]string{"amount": "40"}},
	{ws: "ws_a", id: "conv_3", agent: "agent_1", start: t0 + 200},
	{ws: "ws_a", id: "conv_4", agent: "agent_2", start: t0 + 300, secs: 30, outcome: "unknown"},
}

// conv1 is conv_1 told in full.
var conv1 = call{ws: "ws_a", id: "conv_1", agent: "agent_1", start: t0, secs: 60, outcome: "success", tools: []string{"lookup", "refund"},
	words: "where is my refund", evals: map[string]string{"polite": "success"}, data: map[string]string{"city": "Paris", "amount": "12"}}

func annotations(ws, conv, feedback string, tagIDs ...string) *ticketsv1.ConversationAnnotations {
	return &ticketsv1.ConversationAnnotations{WorkspaceId: ws, ConversationId: conv, Feedback: feedback, TagIds: tagIDs}
}

// A listing is the workspace's conversations newest first, every filter
// given holding; the annotations filter too.
func TestConversationListingFilters(t *testing.T) {
	f := newConvFixture(t)
	for _, c := range append(calls, conv1) {
		f.hear(c)
	}
	tg := f.tag(t, "escalate").TagId
	f.feedback(t, "", "like")
	f.assign(t, "", tg)
	i64 := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		p    app.ConversationParams
		want []string
	}{
		{app.ConversationParams{}, []string{"conv_4", "conv_3", "conv_2", "conv_1"}},
		{app.ConversationParams{AgentID: "agent_1"}, []string{"conv_3", "conv_1"}},
		{app.ConversationParams{CallSuccessful: "failure"}, []string{"conv_2"}},
		{app.ConversationParams{StartedAfter: t0 + 100}, []string{"conv_4", "conv_3"}},
		{app.ConversationParams{StartedBefore: t0 + 200}, []string{"conv_2", "conv_1"}},
		{app.ConversationParams{DurationMin: i64(60)}, []string{"conv_2", "conv_1"}},
		{app.ConversationParams{DurationMin: i64(1), DurationMax: i64(60)}, []string{"conv_4", "conv_1"}},
		{app.ConversationParams{RatingMin: ptr(3)}, []string{"conv_1"}},
		{app.ConversationParams{RatingMax: ptr(4)}, nil},
		{app.ConversationParams{Evaluations: []string{"polite:success"}}, []string{"conv_1"}},
		{app.ConversationParams{DataCollection: []string{"amount:gt:12"}}, []string{"conv_2"}},
		{app.ConversationParams{DataCollection: []string{"amount:lte:12"}}, []string{"conv_1"}},
		{app.ConversationParams{DataCollection: []string{"city:eq:Paris"}}, []string{"conv_1"}},
		{app.ConversationParams{DataCollection: []string{"city:eq:"}}, []string{"conv_4", "conv_3", "conv_2"}},
		{app.ConversationParams{DataCollection: []string{"city:neq:Paris", "amount:in:12|40"}}, []string{"conv_2"}},
		{app.ConversationParams{ToolNames: []string{"refund", "lookup"}}, []string{"conv_2", "conv_1"}},
		{app.ConversationParams{ToolsErrored: []string{"refund"}}, []string{"conv_2"}},
		{app.ConversationParams{TagIDs: []string{tg}}, []string{"conv_1"}},
		{app.ConversationParams{ExcludeStatus: []string{app.ConversationInProgress}}, []string{"conv_4", "conv_2", "conv_1"}},
		{app.ConversationParams{Search: "REFUND"}, []string{"conv_2", "conv_1"}},
		{app.ConversationParams{Search: "refund sorry"}, []string{"conv_2"}},
		{app.ConversationParams{AgentID: "agent_2", CallSuccessful: "success"}, nil},
	} {
		if got, _ := f.list(t, c.p); !slices.Equal(got, c.want) {
			t.Errorf("%+v lists %v, want %v", c.p, got, c.want)
		}
	}
	_, page := f.list(t, app.ConversationParams{AgentID: "agent_1", SummaryMode: "include"})
	if c := page.Conversations[1]; !page.WithSummary || c.Feedback != "like" || !slices.Equal(c.TagIDs, []string{tg}) || c.DurationSecs != 60 || c.Status != app.ConversationDone {
		t.Fatalf("conv_1 listed as %+v (with summary %v)", c, page.WithSummary)
	}
	_, err := f.app.ListConversations(context.Background(), "ws_a", app.ConversationParams{Evaluations: []string{"polite"}})
	wantKind(t, err, apperr.Invalid, "a malformed evaluation filter")
	_, err = f.app.ListConversations(context.Background(), "ws_a", app.ConversationParams{TagIDs: []string{"ctag_unknown"}})
	wantKind(t, err, apperr.NotFound, "filtering by an unknown tag")
}

// Paging walks the listing with cursors, neither repeating nor skipping
// one when a conversation arrives meanwhile; a cursor works only under
// the filters it was issued for.
func TestConversationListingPages(t *testing.T) {
	f := newConvFixture(t)
	for _, c := range calls {
		f.hear(c)
	}
	first, page := f.list(t, app.ConversationParams{PageSize: 3})
	if !slices.Equal(first, []string{"conv_4", "conv_3", "conv_2"}) || !page.HasMore || page.NextCursor == nil {
		t.Fatalf("first page %v, more %v", first, page.HasMore)
	}
	f.hear(call{ws: "ws_a", id: "conv_5", agent: "agent_1", start: t0 + 400})
	rest, last := f.list(t, app.ConversationParams{PageSize: 3, Cursor: *page.NextCursor})
	if !slices.Equal(rest, []string{"conv_1"}) || last.HasMore || last.NextCursor != nil {
		t.Fatalf("second page %v, more %v", rest, last.HasMore)
	}
	_, err := f.app.ListConversations(context.Background(), "ws_a", app.ConversationParams{PageSize: 3, AgentID: "agent_2", Cursor: *page.NextCursor})
	wantKind(t, err, apperr.Invalid, "a cursor under other filters")
	_, err = f.app.ListConversations(context.Background(), "ws_b", app.ConversationParams{PageSize: 3, Cursor: *page.NextCursor})
	wantKind(t, err, apperr.Invalid, "another workspace's cursor")
}

// A tag another replica made a moment ago, which this replica's index has
// not heard of yet, filters at once (its events say it lives) and keeps
// showing on the conversations it is on.
func TestATagThisReplicaHasNotHeardOfFiltersAndShows(t *testing.T) {
	f := newConvFixture(t)
	tg := f.tag(t, "fresh").TagId
	f.assign(t, "", tg)
	f.app.Tags = memory.NewTagIndex() // this replica: nothing heard yet
	ids, page := f.list(t, app.ConversationParams{TagIDs: []string{tg}})
	if !slices.Equal(ids, []string{"conv_1"}) || !slices.Equal(page.Conversations[0].TagIDs, []string{tg}) {
		t.Fatalf("filtered by a tag not heard of: %v", page.Conversations)
	}
	if got := f.detail(t, "conv_1").TagIDs; !slices.Equal(got, []string{tg}) {
		t.Fatalf("GET shows %v", got)
	}
}

// GET shows a conversation of the workspace with its transcript, the
// tickets raised on it (only those), its latest analysis and its label.
// Another workspace's conversation, an unknown one and one known only by
// early annotations are not found.
func TestGetConversation(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	f.transcripts[convKey{"ws_a", "conv_1"}] = json.RawMessage(`[{"role":"user","message":"hi"}]`)
	raised, _ := f.raise(t, "conv_1", "wrong refund window", "", "")
	if _, _, err := f.app.Create(ctx, as(f.qa, ""), app.CreateInput{ConversationID: ptr("conv_2"), AgentID: ptr("agent_1"), QAComment: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	f.manual(t, "agent_1", "not on a conversation")

	d := f.detail(t, "conv_1")
	if d.AgentID != "agent_1" || string(d.Transcript) != string(f.transcripts[convKey{"ws_a", "conv_1"}]) ||
		len(d.Tickets) != 1 || d.Tickets[0].TicketId != raised.TicketId || d.Analysis != nil || d.Label != nil {
		t.Fatalf("detail %+v", d)
	}

	v := &verdicts{analyses: map[convKey]*app.Analysis{{"ws_a", "conv_1"}: {AnalysisID: "an_1"}},
		labels: map[app.LabelKey]app.VerdictLabel{{Kind: app.LabelOfConversation, ConversationID: "conv_1"}: {LabelID: "lbl_1"}}}
	f.app.Verdicts = v
	if d := f.detail(t, "conv_1"); d.Analysis == nil || d.Analysis.AnalysisID != "an_1" || d.Label == nil || d.Label.LabelID != "lbl_1" {
		t.Fatalf("with verdicts: analysis %+v label %+v", d.Analysis, d.Label)
	}
	f.hear(calls[1])
	if d := f.detail(t, "conv_3"); d.Analysis != nil || d.Label != nil {
		t.Fatalf("a conversation without verdicts shows %+v %+v", d.Analysis, d.Label)
	}

	_ = f.convs.Annotate(ctx, 1, annotations("ws_a", "conv_early", "like"))
	for _, k := range []convKey{{"ws_b", "conv_1"}, {"ws_a", "conv_unknown"}, {"ws_a", "conv_early"}} {
		_, err := f.app.GetConversation(ctx, k[0], k[1])
		wantKind(t, err, apperr.NotFound, fmt.Sprint("GET of ", k))
	}
}

// Deleting a conversation shreds its transcript's key, records the
// deletion and drops it from the read models: it is gone from GET, the
// listings and annotating, and deleting it again is not found. Another
// workspace's conversation is not found and nothing is destroyed. A
// delete that failed after the shredding completes when retried.
func TestDeleteConversation(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	wantKind(t, f.app.DeleteConversation(ctx, principal.In("ws_b"), "conv_1"), apperr.NotFound, "deleting another workspace's conversation")
	if len(f.removal.shredded) != 0 || f.app.ConversationDeleted("ws_b", "conv_1") {
		t.Fatalf("another workspace's delete shredded %v", f.removal.shredded)
	}

	f.removal.failRecord = errors.New("stream unavailable")
	if err := f.app.DeleteConversation(ctx, principal.In("ws_a"), "conv_1"); err == nil || f.app.ConversationDeleted("ws_a", "conv_1") {
		t.Fatalf("a delete whose record failed: %v", err)
	}
	f.detail(t, "conv_1") // still listed: the retry finds it
	if err := f.app.DeleteConversation(ctx, principal.In("ws_a"), "conv_1"); err != nil {
		t.Fatal(err)
	}
	want := []convKey{{"ws_a", "conv_1"}}
	if len(f.removal.shredded) != 2 || !slices.Equal(f.removal.recorded, want) || !f.removal.recordedAt.Equal(f.clock) {
		t.Fatalf("shredded %v, recorded %v at %v", f.removal.shredded, f.removal.recorded, f.removal.recordedAt)
	}
	if !f.app.ConversationDeleted("ws_a", "conv_1") || f.app.ConversationDeleted("ws_b", "conv_9") {
		t.Fatal("ConversationDeleted does not tell the deleted conversation")
	}
	_, err := f.app.GetConversation(ctx, "ws_a", "conv_1")
	wantKind(t, err, apperr.NotFound, "GET of a deleted conversation")
	_, err = f.app.GiveFeedback(ctx, as(f.qa, ""), "conv_1", app.FeedbackInput{Feedback: ptr("like")})
	wantKind(t, err, apperr.NotFound, "feedback on a deleted conversation")
	if ids, _ := f.list(t, app.ConversationParams{}); len(ids) != 0 {
		t.Fatalf("a deleted conversation is listed: %v", ids)
	}
	wantKind(t, f.app.DeleteConversation(ctx, principal.In("ws_a"), "conv_1"), apperr.NotFound, "deleting a deleted conversation")

	f.app.Deletion = app.ConversationDeletion{}
	if err := f.app.DeleteConversation(ctx, principal.In("ws_b"), "conv_9"); err == nil || f.app.ConversationDeleted("ws_b", "conv_9") {
		t.Fatalf("a delete with no removal configured: %v", err)
	}
}

// A keyed delete sent again, after the first deleted the conversation,
// is answered as the first was; the key sent with another request (to
// another conversation, or another fingerprint) is refused and deletes
// nothing; the same key in another workspace is another command.
func TestKeyedDeleteIsAnsweredAgain(t *testing.T) {
	f := newConvFixture(t)
	f.hear(call{ws: "ws_a", id: "conv_2", agent: "agent_1", start: 1_700_000_000, secs: 60})
	first := esproto.WithRequestDigest(context.Background(), "digest-of-delete-conv_1")
	if err := f.app.DeleteConversation(first, as(f.qa, "cmd_1"), "conv_1"); err != nil {
		t.Fatal(err)
	}
	if err := f.app.DeleteConversation(first, as(f.qa, "cmd_1"), "conv_1"); err != nil {
		t.Fatalf("the keyed delete sent again: %v", err)
	}
	if len(f.removal.shredded) != 1 {
		t.Fatalf("the delete sent again acted again: shredded %v", f.removal.shredded)
	}
	other := esproto.WithRequestDigest(context.Background(), "digest-of-delete-conv_2")
	wantReused(t, f.app.DeleteConversation(other, as(f.qa, "cmd_1"), "conv_2"), "the key sent to another conversation")
	wantReused(t, f.app.DeleteConversation(other, as(f.qa, "cmd_1"), "conv_1"), "the key sent with another fingerprint")
	if f.app.ConversationDeleted("ws_a", "conv_2") || len(f.removal.shredded) != 1 {
		t.Fatalf("a refused key deleted: shredded %v", f.removal.shredded)
	}
	wantKind(t, f.app.DeleteConversation(first, as(f.qa, ""), "conv_1"), apperr.NotFound, "an unkeyed delete of the deleted conversation")
	wantKind(t, f.app.DeleteConversation(first, as(f.qa, "cmd_2"), "conv_1"), apperr.NotFound, "another key's delete of the deleted conversation")
	stranger := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_b"}, CommandID: "cmd_1"}
	wantReused(t, f.app.DeleteConversation(first, stranger, "conv_1"), "a command id of another workspace")
}

func wantReused(t *testing.T, err error, what string) {
	t.Helper()
	var v apperr.ValidationErrors
	if !errors.As(err, &v) || len(v) != 1 || v[0].Type != "idempotency_key_reused" {
		t.Fatalf("%s: got %v, want idempotency_key_reused", what, err)
	}
}

// A ticket shows the current labels of its failed runs and of its
// conversations, the newest 2000 at most, asked in one call; none when
// the service has no verdicts or the ticket names nothing.
func TestTicketLabels(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	tk := &ticketsv1.Ticket{WorkspaceId: "ws_a", ConversationIds: []string{"conv_1"}, TestFailures: &ticketsv1.TestFailures{
		Invocations: []*ticketsv1.FailedInvocation{{InvocationId: "tinv_1", RunIds: []string{"run_1", "run_2"}}}}}
	if got, err := f.app.TicketLabels(ctx, tk); got != nil || err != nil {
		t.Fatalf("without verdicts: %v %v", got, err)
	}
	run2 := app.LabelKey{Kind: app.LabelOfRun, InvocationID: "tinv_1", RunID: "run_2"}
	conv := app.LabelKey{Kind: app.LabelOfConversation, ConversationID: "conv_1"}
	v := &verdicts{labels: map[app.LabelKey]app.VerdictLabel{run2: {LabelID: "lbl_run"}, conv: {LabelID: "lbl_conv"}}}
	f.app.Verdicts = v
	got, err := f.app.TicketLabels(ctx, tk)
	asked := []app.LabelKey{{Kind: app.LabelOfRun, InvocationID: "tinv_1", RunID: "run_1"}, run2, conv}
	if err != nil || len(got) != 2 || got[0].LabelID != "lbl_run" || got[1].LabelID != "lbl_conv" || len(v.asked) != 1 || !slices.Equal(v.asked[0], asked) {
		t.Fatalf("labels %v %v, asked %v", got, err, v.asked)
	}
	if got, err := f.app.TicketLabels(ctx, &ticketsv1.Ticket{WorkspaceId: "ws_a"}); got != nil || err != nil || len(v.asked) != 1 {
		t.Fatalf("a ticket naming nothing: %v %v, asked %d times", got, err, len(v.asked))
	}
	runs := make([]string, 2001)
	for i := range runs {
		runs[i] = fmt.Sprint("run_", i)
	}
	tk.TestFailures.Invocations[0].RunIds = runs
	if _, err := f.app.TicketLabels(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if last := v.asked[len(v.asked)-1]; len(last) != 2000 || last[0].RunID != "run_2" || last[1999] != conv {
		t.Fatalf("asked %d keys, from %+v", len(last), last[0])
	}
}
