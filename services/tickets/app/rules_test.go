package app_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// The ticket rules, on the in-memory event log and read model: no NATS,
// no store.

type fixture struct {
	app   *app.App
	log   *memlog.Store // the tickets' events
	dir   *memory.Directory
	clock time.Time
	qa    principal.Principal // a member of ws_a
	admin principal.Principal
	other principal.Principal // another workspace
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := memory.NewDirectory()
	dir.PutAgent("ws_a", "agent_1")
	dir.PutAgent("ws_a", "agent_2")
	dir.PutAgent("ws_b", "agent_9")
	dir.PutMember("ws_a", app.Member{UserID: "user_qa"})
	dir.PutMember("ws_a", app.Member{UserID: "user_dev"})
	dir.PutMember("ws_a", app.Member{UserID: "sa_ci", IsServiceAccount: true})
	dir.PutConversation("ws_a", "conv_1", app.Conversation{AgentID: "agent_1", StartedAt: 1_700_000_000, EndedAt: 1_700_000_060})
	f := &fixture{
		clock: time.Unix(1_800_000_000, 0),
		qa:    principal.Principal{WorkspaceID: "ws_a", UserID: "user_qa", Permissions: []string{"convai_write"}},
		admin: principal.Principal{WorkspaceID: "ws_a", UserID: "user_admin", Permissions: []string{principal.PermissionAll}},
		other: principal.Principal{WorkspaceID: "ws_b", UserID: "user_b", Permissions: []string{principal.PermissionAll}},
	}
	f.log, f.dir = memlog.New(), dir
	f.app = app.New(f.log, memory.NewIndex(), dir, slog.New(slog.DiscardHandler),
		func() time.Time { return f.clock })
	f.app.Cursors = cursor.NewCodec([]byte("k"))
	return f
}

var wantKind = testkit.WantKind

func ptr[T any](v T) *T { return &v }

func (f *fixture) raise(t *testing.T, conv, comment, priority, key string) (*ticketsv1.Ticket, bool) {
	t.Helper()
	in := app.CreateInput{ConversationID: &conv, QAComment: &comment}
	if priority != "" {
		in.Priority = &priority
	}
	tk, existing, err := f.app.Create(context.Background(), principal.Caller{Principal: f.qa, CommandID: key}, in)
	if err != nil {
		t.Fatalf("raise on %s: %v", conv, err)
	}
	return tk, existing
}

func (f *fixture) manual(t *testing.T, agent, title string) *ticketsv1.Ticket {
	t.Helper()
	tk, err := f.app.CreateManual(context.Background(), principal.Caller{Principal: f.qa}, agent, app.ManualInput{Title: &title, QAComment: ptr("seen in review")})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func (f *fixture) setStatus(status string) func(*testing.T, string) (*ticketsv1.Ticket, error) {
	return func(_ *testing.T, id string) (*ticketsv1.Ticket, error) {
		return f.app.Update(context.Background(), principal.Caller{Principal: f.qa}, id, app.PatchInput{Status: &status})
	}
}

func TestStatusMachine(t *testing.T) {
	f := newFixture(t)
	tk := f.manual(t, "agent_1", "wrong refund window")
	steps := []struct {
		to string
		ok bool
	}{
		{domain.StatusInProgress, true},
		{domain.StatusOpen, true},
		{domain.StatusResolved, true},
		{domain.StatusInProgress, false}, // resolved reopens to open only
		{domain.StatusOpen, true},
		{domain.StatusMerged, false}, // only a merge merges
	}
	for _, s := range steps {
		got, err := f.setStatus(s.to)(t, tk.TicketId)
		if s.ok {
			if err != nil || got.Status != s.to {
				t.Fatalf("→ %s: %v %v", s.to, got.GetStatus(), err)
			}
			last := got.StatusChanges[len(got.StatusChanges)-1]
			if last.Status != s.to || last.GetChangedByUserId() != "user_qa" || last.ChangedAtUnixSecs != f.clock.Unix() {
				t.Fatalf("→ %s recorded as %+v", s.to, last)
			}
			continue
		}
		wantKind(t, err, apperr.Conflict, "→ "+s.to)
	}
	got, _, err := f.app.Get(context.Background(), "ws_a", tk.TicketId)
	if err != nil || got.Status != domain.StatusOpen || len(got.StatusChanges) != 5 { // its opening and four changes
		t.Fatalf("refused transitions changed the ticket: %v %d %v", got.GetStatus(), len(got.GetStatusChanges()), err)
	}
}

func TestPatchRecordsOnlyWhatChanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.manual(t, "agent_1", "title")
	f.clock = f.clock.Add(time.Minute)
	got, err := f.app.Update(ctx, principal.Caller{Principal: f.qa}, tk.TicketId, app.PatchInput{
		Title: ptr("  new title "), AssigneeUserID: app.Nullable{Set: true, Value: ptr("user_dev")}, Priority: app.Nullable{Set: true, Value: ptr("high")},
	})
	if err != nil || got.Title != "new title" || got.GetAssigneeUserId() != "user_dev" || got.Priority != "high" || got.UpdatedAtUnixSecs != f.clock.Unix() {
		t.Fatalf("patch: %+v %v", got, err)
	}
	// Unassign and clear the priority with explicit nulls.
	got, err = f.app.Update(ctx, principal.Caller{Principal: f.qa}, tk.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true}, Priority: app.Nullable{Set: true}})
	if err != nil || got.AssigneeUserId != nil || got.Priority != "" {
		t.Fatalf("nulls: %+v %v", got, err)
	}
	_, err = f.app.Update(ctx, principal.Caller{Principal: f.qa}, tk.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true, Value: ptr("user_stranger")}})
	wantKind(t, err, apperr.Invalid, "assigning a non-member")
	_, err = f.app.Update(ctx, principal.Caller{Principal: f.other}, tk.TicketId, app.PatchInput{Title: ptr("x")})
	wantKind(t, err, apperr.NotFound, "another workspace's ticket")
}

func TestReportsOnAConversationJoinItsActiveTicket(t *testing.T) {
	f := newFixture(t)
	first, existing := f.raise(t, "conv_1", "quoted 30 days", "low", "")
	if existing || first.AgentId != "agent_1" || first.Source != domain.SourceQA || first.GetFirstSeenUnixSecs() != 1_700_000_000 || first.GetLastSeenUnixSecs() != 1_700_000_060 {
		t.Fatalf("first report: existing=%v %+v", existing, first)
	}
	joined, existing := f.raise(t, "conv_1", "again", "urgent", "")
	if !existing || joined.TicketId != first.TicketId || joined.Priority != "urgent" || len(joined.TicketComments) != 1 {
		t.Fatalf("second report did not join: existing=%v %+v", existing, joined)
	}
	// The join's event tells subscribers the priority changed.
	if got := f.lastChangedFields(t, first.TicketId); !slices.Equal(got, []string{"priority"}) {
		t.Fatalf("a join raising the priority records changed_fields %q", got)
	}
	lower, _ := f.raise(t, "conv_1", "minor", "low", "")
	if lower.Priority != "urgent" {
		t.Fatalf("a joining report lowered the priority to %s", lower.Priority)
	}
	if got := f.lastChangedFields(t, first.TicketId); len(got) != 0 {
		t.Fatalf("a join changing nothing but comments records changed_fields %q", got)
	}
	// Once resolved, a new report opens a new ticket.
	if _, err := f.setStatus(domain.StatusResolved)(t, first.TicketId); err != nil {
		t.Fatal(err)
	}
	fresh, existing := f.raise(t, "conv_1", "still wrong", "", "")
	if existing || fresh.TicketId == first.TicketId {
		t.Fatal("a report on a resolved ticket's conversation must open a new ticket")
	}
}

func TestCreateRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, err := f.app.Create(ctx, principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: ptr("conv_unknown"), QAComment: ptr("x")})
	wantKind(t, err, apperr.NotFound, "an unknown conversation without agent_id")
	_, _, err = f.app.Create(ctx, principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: ptr("conv_1"), QAComment: ptr("x"), AgentID: ptr("agent_2")})
	wantKind(t, err, apperr.Invalid, "agent_id contradicting the conversation's agent")
	_, _, err = f.app.Create(ctx, principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: ptr("conv_1")})
	wantKind(t, err, apperr.Invalid, "neither qa_comment nor turn_comments")
	for _, blank := range []string{"", "  \n\t", "\u00a0\u3000"} {
		_, _, err = f.app.Create(ctx, principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: ptr("conv_1"), QAComment: ptr(blank)})
		wantKind(t, err, apperr.Invalid, "a blank qa_comment and no turn_comments")
	}
	withTurn, _, err := f.app.Create(ctx, principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: ptr("conv_1"), QAComment: ptr(" "),
		TurnComments: []app.TurnCommentInput{{TurnIndex: ptr(1), Comment: "Quoted the old price"}}})
	if err != nil || withTurn.QaComment != nil || withTurn.Title != "Quoted the old price" {
		t.Fatalf("a blank qa_comment beside a turn comment is none, and the title comes from the turn: %+v %v", withTurn, err)
	}
	_, err = f.app.CreateManual(ctx, principal.Caller{Principal: f.other}, "agent_1", app.ManualInput{Title: ptr("x")})
	wantKind(t, err, apperr.NotFound, "another workspace's agent")
	tk, existing, err := f.app.Create(ctx, principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: ptr("conv_new"), AgentID: ptr("agent_2"), QAComment: ptr("x")})
	if err != nil || existing || tk.AgentId != "agent_2" {
		t.Fatalf("a conversation not yet seen, with its agent: %+v %v", tk, err)
	}
}

func TestKeyedWritesApplyOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, _ := f.raise(t, "conv_1", "once", "", "key-create")
	again, existing := f.raise(t, "conv_1", "once, retried", "", "key-create")
	if existing || again.TicketId != first.TicketId || len(again.TicketComments) != 0 {
		t.Fatalf("a retried create: existing=%v %+v", existing, again)
	}
	for range 2 {
		got, err := f.app.AddComment(ctx, principal.Caller{Principal: f.qa, CommandID: "key-comment"}, first.TicketId, app.CommentInput{Comment: "look at turn 3"})
		if err != nil || len(got.TicketComments) != 1 {
			t.Fatalf("keyed comment: %d comments, %v", len(got.GetTicketComments()), err)
		}
	}
	up1, err := f.app.Update(ctx, principal.Caller{Principal: f.qa, CommandID: "key-patch"}, first.TicketId, app.PatchInput{Title: ptr("first body")})
	if err != nil {
		t.Fatal(err)
	}
	up2, err := f.app.Update(ctx, principal.Caller{Principal: f.qa, CommandID: "key-patch"}, first.TicketId, app.PatchInput{Title: ptr("second body")})
	if err != nil || up2.Title != up1.Title {
		t.Fatalf("a replayed patch with another body applied it: %q %v", up2.GetTitle(), err)
	}
}

func TestMerge(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	target := f.manual(t, "agent_1", "target")
	src1, _ := f.raise(t, "conv_1", "one", "urgent", "")
	src2, _, err := f.app.Create(ctx, principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: ptr("conv_2"), AgentID: ptr("agent_1"), QAComment: ptr("two")})
	if err != nil {
		t.Fatal(err)
	}
	alien := f.manual(t, "agent_2", "another agent's")

	_, err = f.app.Merge(ctx, principal.Caller{Principal: f.qa}, target.TicketId, []string{target.TicketId})
	wantKind(t, err, apperr.Invalid, "merging a ticket into itself")
	_, err = f.app.Merge(ctx, principal.Caller{Principal: f.qa}, target.TicketId, []string{alien.TicketId})
	wantKind(t, err, apperr.Invalid, "merging another agent's ticket")

	merged, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa, CommandID: "key-merge"}, target.TicketId, []string{src1.TicketId, src2.TicketId})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(merged.ConversationIds, []string{"conv_1", "conv_2"}) || merged.Priority != "urgent" {
		t.Fatalf("merged target: %v %s", merged.ConversationIds, merged.Priority)
	}
	// The target's event tells subscribers what taking the sources in changed.
	if got := f.lastChangedFields(t, target.TicketId); !slices.Contains(got, "conversation_ids") || !slices.Contains(got, "priority") {
		t.Fatalf("the merge target's changed_fields %q; want conversation_ids and priority", got)
	}
	for _, id := range []string{src1.TicketId, src2.TicketId} {
		s, _, err := f.app.Get(ctx, "ws_a", id)
		if err != nil || s.Status != domain.StatusMerged || s.GetMergedIntoTicketId() != target.TicketId {
			t.Fatalf("source %s: %v %v", id, s.GetStatus(), err)
		}
	}
	// A replay answers the first result; a fresh merge of a merged
	// source is refused, and merged is final.
	replay, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa, CommandID: "key-merge"}, target.TicketId, []string{src1.TicketId, src2.TicketId})
	if err != nil || len(replay.ConversationIds) != 2 {
		t.Fatalf("replayed merge: %+v %v", replay, err)
	}
	_, err = f.app.Merge(ctx, principal.Caller{Principal: f.qa}, target.TicketId, []string{src1.TicketId})
	wantKind(t, err, apperr.Conflict, "merging a merged ticket")
	_, err = f.setStatus(domain.StatusOpen)(t, src1.TicketId)
	wantKind(t, err, apperr.Conflict, "reopening a merged ticket")
	// Its work goes on on the target: no field changes, no comments.
	qa := principal.Caller{Principal: f.qa}
	_, err = f.app.Update(ctx, qa, src1.TicketId, app.PatchInput{Priority: app.Nullable{Set: true, Value: ptr("low")}})
	wantKind(t, err, apperr.Conflict, "a merged ticket's priority")
	_, err = f.app.Update(ctx, qa, src1.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true, Value: ptr("user_dev")}})
	wantKind(t, err, apperr.Conflict, "assigning a merged ticket")
	_, err = f.app.AddComment(ctx, qa, src1.TicketId, app.CommentInput{Comment: "late note"})
	wantKind(t, err, apperr.Conflict, "commenting on a merged ticket")
	_, err = f.app.AddTurnComment(ctx, qa, src1.TicketId, app.TurnCommentInput{TurnIndex: ptr(0), Comment: "late note"})
	wantKind(t, err, apperr.Conflict, "commenting on a merged ticket's turn")
	if s, err := f.app.Update(ctx, qa, src1.TicketId, app.PatchInput{Status: ptr(domain.StatusMerged)}); err != nil || s.Status != domain.StatusMerged {
		t.Fatalf("a PATCH that changes nothing on a merged ticket: %v %v", s.GetStatus(), err)
	}
	// A resolved ticket may absorb; a merged one may not.
	if _, err := f.setStatus(domain.StatusResolved)(t, target.TicketId); err != nil {
		t.Fatal(err)
	}
	late := f.manual(t, "agent_1", "late")
	if _, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa}, target.TicketId, []string{late.TicketId}); err != nil {
		t.Fatalf("a resolved target absorbs: %v", err)
	}
	_, err = f.app.Merge(ctx, principal.Caller{Principal: f.qa}, src1.TicketId, []string{f.manual(t, "agent_1", "x").TicketId})
	wantKind(t, err, apperr.Conflict, "merging into a merged ticket")
}

func TestDeleteIsForTheOwnerOrAnAdmin(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.manual(t, "agent_1", "mine")
	dev := principal.Principal{WorkspaceID: "ws_a", UserID: "user_dev", Permissions: []string{"convai_write"}}
	wantKind(t, f.app.Delete(ctx, principal.Caller{Principal: dev}, tk.TicketId), apperr.Forbidden, "deleting another's ticket")
	if err := f.app.Delete(ctx, principal.Caller{Principal: f.admin}, tk.TicketId); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.app.Get(ctx, "ws_a", tk.TicketId); !errors.Is(err, apperr.TicketNotFound) {
		t.Fatalf("a deleted ticket: %v", err)
	}
	page, _, err := f.app.ReadModel.Page(ctx, app.Query{WorkspaceID: "ws_a", Limit: 10})
	if err != nil || len(page) != 0 {
		t.Fatalf("a deleted ticket is still listed: %d %v", len(page), err)
	}
}

// A keyed manual create sent again answers its first attempt's ticket as
// it now is, and makes no second one: with its agent still there (the
// append tells the retry) and with its agent deleted since (its check
// would now fail).
func TestAKeyedManualCreateRetriedAnswersItsTicketAsItIs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	caller := principal.Caller{Principal: f.qa, CommandID: "key-manual"}
	create := func(title string) *ticketsv1.Ticket {
		t.Helper()
		tk, err := f.app.CreateManual(ctx, caller, "agent_1", app.ManualInput{Title: ptr(title)})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	first := create("Wrong price")
	if _, err := f.app.Update(ctx, principal.Caller{Principal: f.qa}, first.TicketId, app.PatchInput{Title: ptr("Wrong price, twice")}); err != nil {
		t.Fatal(err)
	}
	stored := func() (n uint64) { // the events in the log
		for ; ; n++ {
			if _, err := f.log.At(ctx, n+1); err != nil {
				return n
			}
		}
	}
	events := stored()
	if again := create("Another title"); again.TicketId != first.TicketId || again.Title != "Wrong price, twice" || stored() != events {
		t.Fatalf("the retry answered %s %q (%d events, want %d)", again.TicketId, again.Title, stored(), events)
	}
	f.dir.DeleteAgent("agent_1")
	if again := create("Another title"); again.TicketId != first.TicketId || again.Title != "Wrong price, twice" {
		t.Fatalf("the retry, its agent deleted, answered %s %q", again.TicketId, again.Title)
	}
}

// "@me" names the caller, as the OpenAPI document says: in PATCH's
// assignee_user_id and in the listing's assignee_user_id filter.
func TestAtMeIsTheCaller(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mine, theirs := f.manual(t, "agent_1", "mine"), f.manual(t, "agent_1", "theirs")
	got, err := f.app.Update(ctx, principal.Caller{Principal: f.qa}, mine.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true, Value: ptr("@me")}})
	if err != nil || got.GetAssigneeUserId() != "user_qa" {
		t.Fatalf("PATCH assignee @me: %v %v", got.GetAssigneeUserId(), err)
	}
	if _, err := f.app.Update(ctx, principal.Caller{Principal: f.qa}, theirs.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true, Value: ptr("user_dev")}}); err != nil {
		t.Fatal(err)
	}
	page, err := f.app.List(ctx, "ws_a", app.ListParams{Assignee: "@me", Me: "user_qa"})
	if err != nil || len(page.Tickets) != 1 || page.Tickets[0].Ticket.TicketId != mine.TicketId {
		t.Fatalf("listing assignee @me: %+v %v", page.Tickets, err)
	}
	page, err = f.app.List(ctx, "ws_a", app.ListParams{Assignee: "@me", Me: "user_dev"})
	if err != nil || len(page.Tickets) != 1 || page.Tickets[0].Ticket.TicketId != theirs.TicketId {
		t.Fatalf("listing assignee @me as user_dev: %+v %v", page.Tickets, err)
	}
	// A caller who is no member cannot be assigned, by id or as @me.
	_, err = f.app.Update(ctx, principal.Caller{Principal: f.admin}, mine.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true, Value: ptr("@me")}})
	wantKind(t, err, apperr.Invalid, "assigning @me, not a member")
	if page, err := f.app.List(ctx, "ws_a", app.ListParams{Assignee: "@me"}); err != nil || len(page.Tickets) != 0 {
		t.Fatalf("@me without a caller's user id lists %d tickets, %v", len(page.Tickets), err)
	}
}

// lastChangedFields are the changed_fields of the comment or merge last
// recorded on ticket id of ws_a.
func (f *fixture) lastChangedFields(t *testing.T, id string) []string {
	t.Helper()
	recs := f.history(t, id)
	last := recs[len(recs)-1]
	ev, err := events.Decode(last.Type, last.Data)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := ev.(interface{ GetChangedFields() []string })
	if !ok {
		t.Fatalf("the last event of %s is a %s, which names no changed fields", id, last.Type)
	}
	return c.GetChangedFields()
}
