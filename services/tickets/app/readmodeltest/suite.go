// Package readmodeltest is the conformance suite of app.ReadModel: every
// implementation must answer every listing exactly as the reference does
// (filter, then sort, then keyset page over all live tickets), through
// updates, deletions, redeliveries and writes between pages.
package readmodeltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// reference is the meaning of the read model: the newest state of every
// ticket, and listings computed from all of them.
type reference struct {
	seq     map[string]uint64
	tickets map[string]*ticketsv1.Ticket
}

func (r *reference) put(seq uint64, t *ticketsv1.Ticket) {
	if r.seq[t.TicketId] >= seq {
		return
	}
	r.seq[t.TicketId], r.tickets[t.TicketId] = seq, proto.Clone(t).(*ticketsv1.Ticket)
}

func (r *reference) page(q app.Query) ([]string, bool) {
	var rows []*ticketsv1.Ticket
	for _, t := range r.tickets {
		if t.WorkspaceId == q.WorkspaceID && t.DeletedAtUnixSecs == nil && q.Filter.Matches(t) && q.Residual(t) {
			rows = append(rows, t)
		}
	}
	slices.SortFunc(rows, func(a, b *ticketsv1.Ticket) int {
		return app.PositionOf(b, q.ByPriority).Compare(app.PositionOf(a, q.ByPriority))
	})
	if q.After != nil {
		i := 0
		for i < len(rows) && app.PositionOf(rows[i], q.ByPriority).Compare(*q.After) >= 0 {
			i++
		}
		rows = rows[i:]
	}
	more := len(rows) > q.Limit
	rows = rows[:min(len(rows), q.Limit)]
	return ids(rows), more
}

func (r *reference) active(ws, agent, conv string) string {
	best := ""
	for _, t := range r.tickets {
		if t.WorkspaceId == ws && t.AgentId == agent && t.DeletedAtUnixSecs == nil && domain.IsActive(t.Status) &&
			slices.Contains(t.ConversationIds, conv) && (best == "" || app.PositionOf(t, false).Compare(app.PositionOf(r.tickets[best], false)) > 0) {
			best = t.TicketId
		}
	}
	return best
}

func ids(ts []*ticketsv1.Ticket) []string {
	return testkit.IDs(ts, func(t *ticketsv1.Ticket) string { return t.TicketId })
}

// fixture makes tickets whose fields collide often: few workspaces,
// agents, conversations and labels, and creation times shared by several
// tickets, so ties in every order are exercised.
type fixture struct {
	rng *rand.Rand
	n   int
}

func (f *fixture) ticket(ws string) *ticketsv1.Ticket {
	f.n++
	pick := func(xs ...string) string { return xs[f.rng.IntN(len(xs))] }
	t := &ticketsv1.Ticket{
		TicketId: fmt.Sprintf("tkt_%04d", f.rng.IntN(10_000)*10+f.n%10) + fmt.Sprint(f.n), WorkspaceId: ws,
		AgentId: pick("agent_a", "agent_b", "agent_c"), Status: pick(domain.Statuses...),
		Priority: pick("", "low", "medium", "high", "urgent"), Source: pick(domain.Sources...),
		OwnerUserId: pick("user_1", "user_2"), IssueType: pick("", "other", "hallucination"),
		Labels:          []string{pick("billing", "tone", "latency")},
		ConversationIds: []string{pick("conv_1", "conv_2", "conv_3", "conv_4")},
		CreatedAtUnixMs: 1_700_000_000_000 + int64(f.rng.IntN(40)),
		Title:           pick("Wrong price", "Rude  REPLY", "Slow answer", "Réponse lente", "ok"),
	}
	if f.rng.IntN(2) == 0 {
		qa := pick("Quoted the old\tprice list", "Asked twice for the card number")
		t.QaComment = &qa
	}
	if f.rng.IntN(3) == 0 {
		t.TicketComments = []*ticketsv1.Comment{{Comment: pick("Call back later", "escalated")}}
	}
	if f.rng.IntN(4) == 0 {
		t.TurnComments = []*ticketsv1.TurnComment{{TurnIndex: 3, Comment: pick("wrong greeting", "Too slow")}}
	}
	if f.rng.IntN(3) > 0 {
		a := pick("user_1", "user_2")
		t.AssigneeUserId = &a
	}
	if f.rng.IntN(5) == 0 {
		m := pick("tkt_x", "tkt_y")
		t.MergedIntoTicketId = &m
	}
	return t
}

// queries are the listings the suite checks: every filter alone, some
// together, searches (short, across folded white space, in every text, in
// a change's new comment, of nothing), both orders, and a residual Keep.
func queries() []app.Query {
	filters := []app.Filter{
		{}, {AgentID: "agent_a"}, {Status: domain.StatusOpen}, {Assignee: "unassigned"}, {Assignee: "user_1"},
		{ConversationID: "conv_2"}, {Sources: []string{domain.SourceQA, domain.SourceAgent}}, {Priorities: []string{"urgent", "low"}},
		{OwnerUserID: "agent"}, {OwnerUserID: "user_2"}, {IssueType: "hallucination"}, {Label: "tone"}, {MergedInto: "tkt_x"},
		{AgentID: "agent_b", Status: domain.StatusInProgress, Label: "billing"},
		{AgentID: "agent_nobody"},
		{Search: "price"}, {Search: " old   PRICE "}, {Search: "rude reply"}, {Search: "ÉPONSE"}, {Search: "call back"},
		{Search: "greeting"}, {Search: "refund promised"}, {Search: "ow"}, {Search: "o"}, {Search: "no such words"},
		{Search: "price", AgentID: "agent_a", Status: domain.StatusOpen}, {Search: "slow", Priorities: []string{"high"}},
	}
	var out []app.Query
	for _, f := range filters {
		for _, byPriority := range []bool{false, true} {
			out = append(out, app.Query{WorkspaceID: "ws_1", Filter: f, ByPriority: byPriority})
		}
	}
	out = append(out, app.Query{WorkspaceID: "ws_1", Keep: func(t *ticketsv1.Ticket) bool { return t.AgentId != "agent_c" }},
		app.Query{WorkspaceID: "ws_1", KeepAgent: func(agentID string) bool { return agentID != "agent_b" }},
		app.Query{WorkspaceID: "ws_1", ByPriority: true, KeepAgent: func(agentID string) bool { return agentID == "agent_a" },
			Filter: app.Filter{Status: domain.StatusOpen}},
		app.Query{WorkspaceID: "ws_1", ByPriority: true, Keep: func(t *ticketsv1.Ticket) bool { return strings.Contains(t.Title, "price") }},
		app.Query{WorkspaceID: "ws_empty"})
	return out
}

// Run checks the read model open makes (a fresh, empty one each call)
// with a fixture of n tickets (a few dozen already collide on every field;
// a slow store may take fewer).
func Run(t *testing.T, n int, open func(t *testing.T) app.ReadModel) {
	t.Run("listings equal the reference", func(t *testing.T) {
		ctx := context.Background()
		rm, ref := open(t), &reference{seq: map[string]uint64{}, tickets: map[string]*ticketsv1.Ticket{}}
		f := &fixture{rng: rand.New(rand.NewPCG(1, 2))}
		put := func(seq uint64, tk *ticketsv1.Ticket) {
			t.Helper()
			if err := rm.Put(ctx, seq, tk); err != nil {
				t.Fatal(err)
			}
			ref.put(seq, tk)
		}
		var all []*ticketsv1.Ticket
		seq := uint64(0)
		for i := range n {
			tk := f.ticket([]string{"ws_1", "ws_1", "ws_2"}[i%3])
			seq++
			put(seq, tk)
			all = append(all, tk)
		}
		// Changes: new priority, status and assignee (positions move), deletions,
		// and stale redeliveries that must be ignored.
		for i, tk := range all {
			next := proto.Clone(tk).(*ticketsv1.Ticket)
			switch i % 6 {
			case 0:
				next.Priority, next.Status = "urgent", domain.StatusResolved
			case 1:
				now := int64(1)
				next.DeletedAtUnixSecs = &now
			case 2:
				next.AssigneeUserId = nil
				next.Labels = append(next.Labels, "tone")
			case 3:
				next.TicketComments = append(next.TicketComments, &ticketsv1.Comment{Comment: "Refund  promised"})
				next.Title = "Wrong price"
			default:
				continue
			}
			seq++
			put(seq, next)
			put(seq-1, tk) // an older event delivered late changes nothing
		}
		for _, q := range queries() {
			for _, limit := range []int{9, 100} {
				q.Limit = limit
				checkPaging(t, rm, ref, q)
			}
		}
		for _, ws := range []string{"ws_1", "ws_2"} {
			for _, agent := range []string{"agent_a", "agent_b", "agent_c"} {
				for _, conv := range []string{"conv_1", "conv_2", "conv_3", "conv_4", "conv_none"} {
					got, err := rm.ActiveTicket(ctx, ws, agent, conv)
					if err != nil || got != ref.active(ws, agent, conv) {
						t.Fatalf("ActiveTicket(%s, %s, %s) = %q, %v; want %q", ws, agent, conv, got, err, ref.active(ws, agent, conv))
					}
				}
			}
		}
	})

	t.Run("paging under concurrent writes never repeats or skips", func(t *testing.T) {
		ctx := context.Background()
		rm := open(t)
		f := &fixture{rng: rand.New(rand.NewPCG(3, 4))}
		var want []*ticketsv1.Ticket
		for i := range 60 {
			tk := f.ticket("ws_1")
			tk.Status, tk.DeletedAtUnixSecs, tk.MergedIntoTicketId = domain.StatusOpen, nil, nil
			if err := rm.Put(ctx, uint64(i+1), tk); err != nil {
				t.Fatal(err)
			}
			want = append(want, tk)
		}
		slices.SortFunc(want, func(a, b *ticketsv1.Ticket) int { return app.PositionOf(b, false).Compare(app.PositionOf(a, false)) })
		var got []string
		var after *app.Position
		seq := uint64(1000)
		for page := 0; ; page++ {
			ts, more, err := rm.Page(ctx, app.Query{WorkspaceID: "ws_1", After: after, Limit: 9})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(ts)...)
			if !more {
				break
			}
			p := app.PositionOf(ts[len(ts)-1], false)
			after = &p
			// Between pages, newer tickets arrive: they sort before the
			// cursor and must not show up in later pages.
			newer := f.ticket("ws_1")
			newer.CreatedAtUnixMs, newer.Status = 1_800_000_000_000+int64(page), domain.StatusOpen
			newer.DeletedAtUnixSecs = nil
			seq++
			if err := rm.Put(ctx, seq, newer); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, ids(want)) {
			t.Fatalf("paged %d tickets %v,\nwant %d %v", len(got), got, len(want), ids(want))
		}
	})
}

// checkPaging pages through q to the end, comparing every page.
func checkPaging(t *testing.T, rm app.ReadModel, ref *reference, q app.Query) {
	t.Helper()
	for page := 0; page < 1000; page++ {
		got, more, err := rm.Page(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		want, wantMore := ref.page(q)
		if !slices.Equal(ids(got), want) || more != wantMore {
			t.Fatalf("%+v (page %d): got %v more=%v, want %v more=%v", q.Filter, page, ids(got), more, want, wantMore)
		}
		if !more {
			return
		}
		p := app.PositionOf(got[len(got)-1], q.ByPriority)
		q.After = &p
	}
	t.Fatal("paging did not end")
}
