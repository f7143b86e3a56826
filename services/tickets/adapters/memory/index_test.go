package memory

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/readmodeltest"
)

// The memory index passes the suite the store's read model passes (in
// package adapters).
func TestIndexConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return NewIndex() })
}

// An index without search lists answers searches by testing each ticket.
func TestIndexWithoutSearchConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return NewIndex(WithoutSearch()) })
}

// A loading index given the suite's tickets (new ones, changes, stale
// redeliveries, deletions) lists them at Loaded exactly as an index that
// listed each at once, and goes on live after.
func TestLoadingIndexConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return &loadedOnFirstRead{Index: NewLoadingIndex()} })
}

// The same, each ticket given encoded as a replay's record carries it:
// staged off its head, decoded at Loaded.
func TestLoadingIndexFromRecordsConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return &putEncoded{&loadedOnFirstRead{Index: NewLoadingIndex()}} })
}

// putEncoded puts each ticket through PutEncoded.
type putEncoded struct{ *loadedOnFirstRead }

func (p *putEncoded) Put(ctx context.Context, seq uint64, t *ticketsv1.Ticket) error {
	b, err := proto.Marshal(t)
	if err != nil {
		return err
	}
	return p.PutEncoded(ctx, seq, b)
}

// loadedOnFirstRead is a loading index whose replay ends at its first read.
type loadedOnFirstRead struct {
	*Index
	once sync.Once
}

func (l *loadedOnFirstRead) loaded() {
	l.once.Do(l.Loaded)
}

func (l *loadedOnFirstRead) Page(ctx context.Context, q app.Query) ([]*ticketsv1.Ticket, bool, error) {
	l.loaded()
	return l.Index.Page(ctx, q)
}

func (l *loadedOnFirstRead) ActiveTicket(ctx context.Context, workspaceID, agentID, conversationID string) (string, error) {
	l.loaded()
	return l.Index.ActiveTicket(ctx, workspaceID, agentID, conversationID)
}

// Labels keep the listing's order however entries come: in order, in
// random order, each just after the same one (which exhausts the room
// between two and spreads windows out), each first of all, and each at
// the start of the second half.
func TestLabelsKeepTheListingsOrder(t *testing.T) {
	const n = 3000
	for _, c := range []struct {
		name    string
		created func(i int) int64
		first   bool // a ticket created at 0 is listed before the others
	}{
		{name: "in order", created: func(i int) int64 { return int64(i) }},
		{name: "at random", created: func(i int) int64 { return rand.New(rand.NewPCG(uint64(i), 5)).Int64N(1000) }},
		{name: "each after the same one", created: func(i int) int64 { return int64(1 + n - i) }, first: true},
		{name: "each first", created: func(i int) int64 { return int64(n - i) }},
		{name: "each at the start of the second half", created: func(i int) int64 {
			if i < n/2 {
				return int64(n + i) // the first half, in order
			}
			return int64(2*n - i) // then each just before the one before, among the first half
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, sp := NewIndex(), &space{}
			if c.first {
				m.listNew(sp, &entry{id: "tkt_first", created: 0}, nil, nil)
			}
			for i := range n {
				m.listNew(sp, &entry{id: fmt.Sprintf("tkt_%05d", i), created: c.created(i)}, nil, nil)
				if i%97 != 0 && i != n-1 {
					continue
				}
				ords := sp.all.AppendTo(nil)
				for j := 1; j < len(ords); j++ {
					a, b := sp.entries[ords[j-1]], sp.entries[ords[j]]
					if a.created > b.created || a.created == b.created && a.id >= b.id {
						t.Fatalf("after %d entries, the list holds %s@%d before %s@%d", i+1, a.id, a.created, b.id, b.created)
					}
					if sp.labels[ords[j-1]] >= sp.labels[ords[j]] || !sp.less(ords[j-1], ords[j]) || sp.less(ords[j], ords[j-1]) {
						t.Fatalf("after %d entries, %s (label %d) does not stand before %s (label %d)", i+1, a.id, sp.labels[ords[j-1]], b.id, sp.labels[ords[j]])
					}
				}
			}
		})
	}
}

// A deleted agent's tickets, which may be most of a workspace's, are
// passed by on its agent alone: a page reads only the tickets it may
// list. Before, every listing read (and decoded, under the index's lock)
// each of them to find them hidden.
func TestADeletedAgentsTicketsAreNotReadByAListing(t *testing.T) {
	ctx := context.Background()
	m := NewIndex()
	seq := uint64(0)
	put := func(agent string, n int) {
		for i := range n {
			seq++
			tk := &ticketsv1.Ticket{TicketId: fmt.Sprintf("tkt_%s_%04d", agent, i), WorkspaceId: "ws_1", AgentId: agent,
				Status: "open", CreatedAtUnixMs: int64(seq), Labels: []string{}}
			if err := m.Put(ctx, seq, tk); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("agent_live", 30)
	put("agent_gone", 2000) // the newest: walked first
	askedOf, read := map[string]int{}, 0
	for _, byPriority := range []bool{false, true} {
		page, more, err := m.Page(ctx, app.Query{WorkspaceID: "ws_1", Limit: 10, ByPriority: byPriority,
			KeepAgent: func(agent string) bool { askedOf[agent]++; return agent != "agent_gone" },
			Keep:      func(*ticketsv1.Ticket) bool { read++; return true }})
		if err != nil || len(page) != 10 || !more || page[0].AgentId != "agent_live" {
			t.Fatalf("by priority %v: %d tickets, more %v, %v", byPriority, len(page), more, err)
		}
	}
	if read > 2*11 || askedOf["agent_gone"] > 2 {
		t.Fatalf("two pages of 10 read %d tickets and asked of the deleted agent %d times; want at most 22 and 2", read, askedOf["agent_gone"])
	}
}

// Reset (the TICKETS stream made anew, numbered from 1 again) leaves the
// index with nothing, taking the new stream's tickets at any sequence:
// a ticket the new stream lacks is not listed, and one it changes at a
// sequence below the old one's is.
func TestAResetIndexTakesTheNewStreamsTickets(t *testing.T) {
	ctx := context.Background()
	for _, loading := range []bool{false, true} {
		m := NewIndex()
		if loading {
			m = NewLoadingIndex()
		}
		put := func(seq uint64, id, title string) {
			t.Helper()
			tk := &ticketsv1.Ticket{TicketId: id, WorkspaceId: "ws_1", AgentId: "agent_1", Title: title, Status: "open", CreatedAtUnixMs: 1, Labels: []string{}}
			if err := m.Put(ctx, seq, tk); err != nil {
				t.Fatal(err)
			}
		}
		put(100, "tkt_kept", "before")
		put(101, "tkt_lost", "before")
		m.Reset()
		put(1, "tkt_kept", "after")
		m.Loaded()
		page, _, err := m.Page(ctx, app.Query{WorkspaceID: "ws_1", Limit: 10})
		if err != nil || len(page) != 1 || page[0].TicketId != "tkt_kept" || page[0].Title != "after" {
			t.Fatalf("loading=%v: after a reset the index lists %v (%v); want tkt_kept as the new stream has it", loading, page, err)
		}
	}
}

// Holds says the index has a ticket as of a sequence or later, so the
// stream's copy of a replica's own write need not be decoded; an older
// sequence is held, a newer one, another ticket or one after a Reset not.
func TestHoldsIsTheTicketsSequence(t *testing.T) {
	m := NewIndex()
	tk := &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_1", AgentId: "agent_1", Status: "open", CreatedAtUnixMs: 1}
	if err := m.Put(context.Background(), 7, tk); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		seq  uint64
		want bool
	}{{"tkt_1", 6, true}, {"tkt_1", 7, true}, {"tkt_1", 8, false}, {"tkt_2", 1, false}} {
		if got := m.Holds(c.id, c.seq); got != c.want {
			t.Errorf("Holds(%s, %d) = %v, want %v", c.id, c.seq, got, c.want)
		}
	}
	m.Reset()
	if m.Holds("tkt_1", 1) {
		t.Error("after a Reset the index holds tkt_1")
	}
	// While it loads, a replay's record is always applied: Put keeps the
	// newest.
	loading := NewLoadingIndex()
	if err := loading.Put(context.Background(), 7, tk); err != nil {
		t.Fatal(err)
	}
	if loading.Holds("tkt_1", 6) {
		t.Error("a loading index said it holds a staged ticket")
	}
	if err := loading.Put(context.Background(), 6, &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_1", AgentId: "agent_1", Status: "resolved", CreatedAtUnixMs: 1}); err != nil {
		t.Fatal(err)
	}
	loading.Loaded()
	if !loading.Holds("tkt_1", 7) || loading.Holds("tkt_1", 8) {
		t.Error("once loaded, the index holds tkt_1 as of 7, its newest")
	}
}

// A ticket put as its record carries it (PutEncoded) is the ticket Put
// would keep: listed and read back the same, replay's rules alike (an
// older record changes nothing); an encoding that is no ticket is
// refused and keeps nothing.
func TestPutEncodedIsPutOfTheDecodedTicket(t *testing.T) {
	ctx := context.Background()
	tk := &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_1", AgentId: "agent_1", Status: "open", Title: "Refund promised", CreatedAtUnixMs: 1}
	encoded, err := proto.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	for _, loading := range []bool{false, true} {
		m := NewIndex()
		if loading {
			m = NewLoadingIndex()
		}
		record := slices.Clone(encoded)
		if err := m.PutEncoded(ctx, 5, record); err != nil {
			t.Fatal(err)
		}
		clear(record) // the index keeps a copy, not the record's bytes
		older, _ := proto.Marshal(&ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_1", AgentId: "agent_1", Status: "resolved", CreatedAtUnixMs: 1})
		if err := m.PutEncoded(ctx, 4, older); err != nil {
			t.Fatal(err)
		}
		if err := m.PutEncoded(ctx, 6, []byte{0xff, 0xff}); err == nil {
			t.Error("an encoding that is no ticket was taken")
		}
		m.Loaded()
		page, _, err := m.Page(ctx, app.Query{WorkspaceID: "ws_1", Limit: 10, Filter: app.Filter{Search: "refund"}})
		if err != nil || len(page) != 1 || !proto.Equal(page[0], tk) {
			t.Errorf("loading %v: %v %v, want the ticket as put", loading, page, err)
		}
	}
}

// A staged record whose head reads but whose ticket does not decode (a
// title that is not UTF-8) is left out at Loaded, and said so: the other
// tickets are listed, and a later record of the same ticket is taken.
func TestAStagedTicketThatDoesNotDecodeIsLeftOut(t *testing.T) {
	ctx := context.Background()
	var logged bytes.Buffer
	m := NewLoadingIndex(WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	good, _ := proto.Marshal(&ticketsv1.Ticket{TicketId: "tkt_good", WorkspaceId: "ws_1", Title: "ok", CreatedAtUnixMs: 1})
	bad := protowire.AppendTag(nil, ticketIDField, protowire.BytesType)
	bad = protowire.AppendString(bad, "tkt_bad")
	bad = protowire.AppendTag(bad, ticketFields.ByName("title").Number(), protowire.BytesType)
	bad = protowire.AppendBytes(bad, []byte{0xff, 0xfe})
	for seq, b := range [][]byte{good, bad} {
		if err := m.PutEncoded(ctx, uint64(seq+1), b); err != nil {
			t.Fatal(err)
		}
	}
	m.Loaded()
	page, _, err := m.Page(ctx, app.Query{WorkspaceID: "ws_1", Limit: 10})
	if err != nil || len(page) != 1 || page[0].TicketId != "tkt_good" {
		t.Fatalf("listed %v %v, want tkt_good alone", page, err)
	}
	if !strings.Contains(logged.String(), "tkt_bad") {
		t.Errorf("the ticket left out was not said: %q", logged.String())
	}
	later, _ := proto.Marshal(&ticketsv1.Ticket{TicketId: "tkt_bad", WorkspaceId: "ws_1", Title: "fixed", CreatedAtUnixMs: 2})
	if err := m.PutEncoded(ctx, 3, later); err != nil {
		t.Fatal(err)
	}
	if page, _, _ = m.Page(ctx, app.Query{WorkspaceID: "ws_1", Limit: 10}); len(page) != 2 {
		t.Errorf("after a later record of it, listed %d tickets, want 2", len(page))
	}
}
