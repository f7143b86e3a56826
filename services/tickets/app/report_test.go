package app_test

import (
	"context"
	"sync"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Reports on one conversation sent at once open one ticket, however
// their writes interleave (here the first report's create is stored and
// held until the second report has written too): the second joins the
// ticket the first opened. Before, each found no active ticket in the
// read model (the first not projected yet) and opened its own.
func TestReportsAtOnceOnAConversationOpenOneTicket(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		f, held := newHeldFixture(t)
		held.Arm(2)
		var got [2]*ticketsv1.Ticket
		var existing [2]bool
		var wg sync.WaitGroup
		for i, comment := range []string{"first look", "second look"} {
			wg.Go(func() {
				key := ""
				if keyed {
					key = comment
				}
				got[i], existing[i] = f.raise(t, "conv_1", comment, "", key)
			})
		}
		wg.Wait()
		if got[0].TicketId != got[1].TicketId || existing[0] == existing[1] {
			t.Fatalf("keyed %v: reports at once answered tickets %s (existing %v) and %s (existing %v); want one opened, one joined",
				keyed, got[0].TicketId, existing[0], got[1].TicketId, existing[1])
		}
		tk, _, err := f.app.Get(context.Background(), "ws_a", got[0].TicketId)
		if err != nil {
			t.Fatal(err)
		}
		if comments := len(tk.TicketComments) + boolInt(tk.QaComment != nil); comments != 2 {
			t.Fatalf("keyed %v: the ticket holds %d of the two reports", keyed, comments)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A report joins its conversation's active ticket, reached through the
// merge that folded it into another; once that one is resolved, or the
// conversation's ticket deleted, the next report opens a new ticket,
// which later reports join. A keyed report sent again answers as it did.
func TestReportsFollowTheConversationsActiveTicket(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, existing := f.raise(t, "conv_1", "slow", "", "")
	if existing {
		t.Fatal("the first report joined a ticket")
	}
	target := f.manual(t, "agent_1", "slowness")
	if _, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa}, target.TicketId, []string{first.TicketId}); err != nil {
		t.Fatal(err)
	}
	if got, existing := f.raise(t, "conv_1", "slow again", "", ""); !existing || got.TicketId != target.TicketId {
		t.Fatalf("after the merge a report went to %s (existing %v); want it joined to the merge's target %s", got.TicketId, existing, target.TicketId)
	}
	if _, err := f.setStatus(domain.StatusResolved)(t, target.TicketId); err != nil {
		t.Fatal(err)
	}
	second, existing := f.raise(t, "conv_1", "still slow", "", "k-second")
	if existing || second.TicketId == first.TicketId || second.TicketId == target.TicketId {
		t.Fatalf("after the resolve a report went to %s (existing %v); want a new ticket", second.TicketId, existing)
	}
	joined, existing := f.raise(t, "conv_1", "and again", "", "k-join")
	if !existing || joined.TicketId != second.TicketId {
		t.Fatalf("a report went to %s (existing %v); want it joined to %s", joined.TicketId, existing, second.TicketId)
	}
	for key, want := range map[string]*ticketsv1.Ticket{"k-second": second, "k-join": joined} {
		again, existing := f.raise(t, "conv_1", map[string]string{"k-second": "still slow", "k-join": "and again"}[key], "", key)
		if again.TicketId != want.TicketId || existing != (key == "k-join") || len(again.TicketComments) != len(want.TicketComments) {
			t.Fatalf("%s sent again answered %s (existing %v, %d comments); want %s as first answered", key, again.TicketId, existing, len(again.TicketComments), want.TicketId)
		}
	}
	if err := f.app.Delete(ctx, principal.Caller{Principal: f.admin}, second.TicketId); err != nil {
		t.Fatal(err)
	}
	third, existing := f.raise(t, "conv_1", "slow once more", "", "")
	if existing || third.TicketId == second.TicketId {
		t.Fatalf("after the delete a report went to %s (existing %v); want a new ticket", third.TicketId, existing)
	}
	if again, existing := f.raise(t, "conv_1", "and more", "", ""); !existing || again.TicketId != third.TicketId {
		t.Fatalf("a report went to %s (existing %v); want it joined to %s", again.TicketId, existing, third.TicketId)
	}
}

// A keyed report that reached its conversation's ticket through a merge
// joined the merge's target: sent again once that target is resolved, it
// answers the target as the first attempt left it, and opens nothing.
// Before, the replay looked for its first attempt on the conversation's
// own ticket alone, found none there, and opened a new ticket.
func TestAKeyedReportJoinedThroughAMergeAnswersAsItDid(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, _ := f.raise(t, "conv_1", "slow", "", "")
	target := f.manual(t, "agent_1", "slowness")
	if _, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa}, target.TicketId, []string{first.TicketId}); err != nil {
		t.Fatal(err)
	}
	joined, existing := f.raise(t, "conv_1", "slow again", "", "k-merged")
	if !existing || joined.TicketId != target.TicketId {
		t.Fatalf("a report went to %s (existing %v); want it joined to the merge's target %s", joined.TicketId, existing, target.TicketId)
	}
	if _, err := f.setStatus(domain.StatusResolved)(t, target.TicketId); err != nil {
		t.Fatal(err)
	}
	again, existing := f.raise(t, "conv_1", "slow again", "", "k-merged")
	if !existing || again.TicketId != target.TicketId || len(again.TicketComments) != len(joined.TicketComments) || again.Status != joined.Status {
		t.Fatalf("the report sent again answered %s (existing %v, status %s); want %s (status %s) as first answered", again.TicketId, existing, again.Status, target.TicketId, joined.Status)
	}
	page, err := f.app.List(ctx, f.qa.WorkspaceID, app.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tickets) != 2 {
		t.Fatalf("%d tickets after the replay; want the two there were", len(page.Tickets))
	}
}
