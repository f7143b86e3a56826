package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Rule tests of the tickets listing, turn comments and assignable users.

// Paging newest first visits every ticket once, and a cursor is good only
// for the listing (workspace and filters) that made it.
func TestListPagesNewestFirstWithScopedCursors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var created []string
	for _, title := range []string{"one", "two", "three", "four", "five"} {
		created = append(created, f.manual(t, "agent_1", title).TicketId)
		f.clock = f.clock.Add(1e9)
	}
	var seen []string
	p := app.ListParams{PageSize: 2}
	for {
		page, err := f.app.List(ctx, "ws_a", p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Tickets {
			seen = append(seen, l.Ticket.TicketId)
		}
		if !page.HasMore {
			break
		}
		if page.NextCursor == nil || len(page.Tickets) != 2 {
			t.Fatalf("a page with more after it: %d tickets, cursor %v", len(page.Tickets), page.NextCursor)
		}
		p.Cursor = *page.NextCursor
	}
	for i, id := range seen {
		if id != created[len(created)-1-i] {
			t.Fatalf("listed %v, want newest first of %v", seen, created)
		}
	}
	if len(seen) != len(created) {
		t.Fatalf("listed %d of %d", len(seen), len(created))
	}

	first, _ := f.app.List(ctx, "ws_a", app.ListParams{PageSize: 2})
	for what, p := range map[string]app.ListParams{
		"another filter": {PageSize: 2, Status: "open", Cursor: *first.NextCursor},
		"a forged one":   {PageSize: 2, Cursor: "not-a-cursor"},
	} {
		if _, err := f.app.List(ctx, "ws_a", p); !invalidCursor(err) {
			t.Errorf("%s: %v; want an invalid cursor", what, err)
		}
	}
	if _, err := f.app.List(ctx, "ws_b", app.ListParams{PageSize: 2, Cursor: *first.NextCursor}); !invalidCursor(err) {
		t.Errorf("another workspace's cursor: %v; want an invalid cursor", err)
	}
}

// invalidCursor reports whether err refuses the query's cursor.
func invalidCursor(err error) bool {
	var v apperr.ValidationErrors
	return errors.As(err, &v) && len(v) == 1 && slices.Equal(v[0].Loc, []any{"query", "cursor"})
}

// A search finds its words in the title, the QA comment, comments and
// turn comments, in that order, and says where, with a snippet.
func TestListSearchSaysWhereItMatched(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	byTitle := f.manual(t, "agent_1", "Refund window wrong")
	byTurn := f.manual(t, "agent_1", "Greeting")
	if _, err := f.app.AddTurnComment(ctx, principal.Caller{Principal: f.qa}, byTurn.TicketId, app.TurnCommentInput{TurnIndex: ptr(3), Comment: "quoted the REFUND policy of 2019"}); err != nil {
		t.Fatal(err)
	}
	f.manual(t, "agent_1", "Unrelated")

	page, err := f.app.List(ctx, "ws_a", app.ListParams{Search: "refund"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*app.Match{}
	for _, l := range page.Tickets {
		got[l.Ticket.TicketId] = l.Match
	}
	title, turn := got[byTitle.TicketId], got[byTurn.TicketId]
	if len(got) != 2 || title == nil || turn == nil {
		t.Fatalf("searched: %v", got)
	}
	if title.Field != "title" || title.Snippet[title.HighlightStart:title.HighlightEnd] != "Refund" {
		t.Errorf("title match: %+v", title)
	}
	if turn.Field != "turn_comment" || turn.TurnIndex == nil || *turn.TurnIndex != 3 || strings.ToLower(turn.Snippet[turn.HighlightStart:turn.HighlightEnd]) != "refund" {
		t.Errorf("turn comment match: %+v", turn)
	}
}

// A turn comment names its turn; one without is refused before anything
// is stored.
func TestTurnComments(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.manual(t, "agent_1", "Greeting")
	_, err := f.app.AddTurnComment(ctx, principal.Caller{Principal: f.qa}, tk.TicketId, app.TurnCommentInput{Comment: "which turn?"})
	wantKind(t, err, apperr.Invalid, "a turn comment without its turn")
	got, err := f.app.AddTurnComment(ctx, principal.Caller{Principal: f.qa}, tk.TicketId, app.TurnCommentInput{TurnIndex: ptr(0), Comment: "too curt"})
	if err != nil || len(got.TurnComments) != 1 || got.TurnComments[0].TurnIndex != 0 || got.TurnComments[0].GetOwnerUserId() != "user_qa" {
		t.Fatalf("turn comment: %+v, %v", got.GetTurnComments(), err)
	}
	_, err = f.app.AddTurnComment(ctx, principal.Caller{Principal: f.other}, tk.TicketId, app.TurnCommentInput{TurnIndex: ptr(0), Comment: "mine"})
	wantKind(t, err, apperr.NotFound, "another workspace's turn comment")
}

// The members a ticket may be assigned to are the workspace's people (not
// its service accounts, as the public API lists them), for an agent of
// the workspace only.
func TestAssignableUsers(t *testing.T) {
	f := newFixture(t)
	members, err := f.app.AssignableUsers(context.Background(), "ws_a", "agent_1")
	if err != nil || len(members) != 2 || members[0].IsServiceAccount || members[1].IsServiceAccount {
		t.Fatalf("assignable: %v, %v", members, err)
	}
	_, err = f.app.AssignableUsers(context.Background(), "ws_a", "agent_9")
	wantKind(t, err, apperr.NotFound, "another workspace's agent")
}
