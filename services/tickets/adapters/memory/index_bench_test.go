package memory

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// benchTicket is ticket i of a QA team's workspace, shaped as the
// million-ticket bench writes them (ticketsbench): a title and a comment
// with the call's specifics, a priority, an issue type, a common label
// and, on every 10th and 100,000th ticket, one more; a third worked on.
func benchTicket(i int) *ticketsv1.Ticket {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	cities := []string{"Denver", "Paris", "Lima", "Berlin", "Lagos", "Toronto", "Madrid", "Osaka", "Austin", "Dublin", "Nairobi", "Lisbon", "Chicago", "Seoul", "Oslo", "Quito"}
	city := cities[r.IntN(len(cities))]
	titles := []string{"Agent quoted the wrong refund window for order %d", "Caller in " + city + " was transferred twice (%d)",
		"Booking change to day %d not confirmed", "Agent promised a %d dollar voucher it cannot give",
		"Long silence before the agent answered (%d s)", "Tool lookup_%d failed and the agent did not say so",
		"Caller asked for a supervisor three times (%d)"}
	comments := []string{"The agent said refunds take thirty days; the policy says five business days. Order %d.",
		"The agent charged %d dollars without reading the amount back.",
		"Good call overall, but the greeting still names the old brand (%d).",
		"The caller from " + city + " was asked for the same details twice after the transfer (%d).",
		"The knowledge base article on plan %d is missing the new fee."}
	qa := fmt.Sprintf(comments[r.IntN(len(comments))], r.IntN(100_000))
	labels := []string{[]string{"billing", "delivery", "booking", "tone", "latency"}[r.IntN(5)]}
	if i%10 == 0 {
		labels = append(labels, "weekly-review")
	}
	if i%100_000 == 7 {
		labels = append(labels, "audit")
	}
	t := &ticketsv1.Ticket{
		TicketId: fmt.Sprintf("tkt_%016x", r.Uint64()), WorkspaceId: "ws_1", AgentId: fmt.Sprintf("agent_%d", i%8),
		Title: fmt.Sprintf(titles[r.IntN(len(titles))], r.IntN(100_000)), QaComment: &qa,
		Status: domain.StatusOpen, Priority: []string{"low", "medium", "medium", "high", "urgent"}[r.IntN(5)],
		Source: domain.SourceQA, OwnerUserId: "user_1", IssueType: domain.IssueTypes[r.IntN(len(domain.IssueTypes))],
		Labels: labels, ConversationIds: []string{fmt.Sprintf("conv_%d", i)},
		CreatedAtUnixMs: 1_700_000_000_000 + int64(i)*10,
	}
	if i%3 == 0 {
		t.Status = []string{domain.StatusInProgress, domain.StatusResolved}[r.IntN(2)]
	}
	return t
}

func benchIndex(b *testing.B, n int) *Index {
	b.Helper()
	m := NewIndex()
	for i := range n {
		if err := m.Put(context.Background(), uint64(i+1), benchTicket(i)); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// The index's heap per ticket (go test -bench IndexMemory).
func BenchmarkIndexMemory(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m := benchIndex(b, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/ticket")
		runtime.KeepAlive(m)
	}
}

// benchTickets is the size of BenchmarkIndexPage's workspaces
// (-index-tickets 1000000 for the million-ticket bench's).
var benchTickets = flag.Int("index-tickets", 100_000, "tickets in BenchmarkIndexPage's workspaces")

// benchLiveIndex is benchIndex as a live platform writes it: tickets
// created three to a millisecond by concurrent clients, each put up to
// 16 places away from its listing order.
func benchLiveIndex(b *testing.B, n int) *Index {
	b.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for i := range order {
		j := min(n-1, i+r.IntN(16))
		order[i], order[j] = order[j], order[i]
	}
	m := NewIndex()
	for seq, i := range order {
		t := benchTicket(i)
		t.CreatedAtUnixMs = 1_700_000_000_000 + int64(i)/3
		if err := m.Put(context.Background(), uint64(seq+1), t); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// A page of 100 under the listings the million-ticket bench measures, on
// an index written in order (a replay's) and on one written live.
func BenchmarkIndexPage(b *testing.B) {
	for _, idx := range []struct {
		name  string
		build func(*testing.B, int) *Index
	}{{"replayed", benchIndex}, {"live", benchLiveIndex}} {
		b.Run(idx.name, func(b *testing.B) { benchPages(b, idx.build(b, *benchTickets)) })
	}
}

func benchPages(b *testing.B, m *Index) {
	for _, c := range []struct {
		name string
		q    app.Query
	}{
		{"none", app.Query{}},
		{"urgent_first", app.Query{ByPriority: true}},
		{"rare_label", app.Query{Filter: app.Filter{Label: "audit"}}},
		{"common_label", app.Query{Filter: app.Filter{Label: "weekly-review"}}},
		{"several", app.Query{Filter: app.Filter{AgentID: "agent_3", Status: domain.StatusOpen, Priorities: []string{"urgent"}, Label: "weekly-review"}}},
		{"search_common", app.Query{Filter: app.Filter{Search: "refund window"}}},
		{"search_none", app.Query{Filter: app.Filter{Search: "supervisor Osaka"}}}, // both words common, never together
	} {
		b.Run(c.name, func(b *testing.B) {
			q := c.q
			q.WorkspaceID, q.Limit = "ws_1", 100
			for b.Loop() {
				if _, _, err := m.Page(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A restart's replay: tickets put as their records carry them, in the
// order of their last change (a random one here), then listed at once
// (go test -bench IndexLoad -benchmem).
func BenchmarkIndexLoad(b *testing.B) {
	const n = 200_000
	records := make([][]byte, n)
	for i := range records {
		var err error
		if records[i], err = proto.Marshal(benchTicket(i)); err != nil {
			b.Fatal(err)
		}
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for b.Loop() {
		m := NewLoadingIndex()
		for seq, i := range order {
			if err := m.PutEncoded(context.Background(), uint64(seq+1), records[i]); err != nil {
				b.Fatal(err)
			}
		}
		m.Loaded()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/ticket")
}

// A restart's replay of ticket records into a loading index, each record
// decoded whole and its ticket put (and encoded again), against the
// ticket's encoding read out of the record and put as it is (go test
// -bench ReplayRecords -benchmem; allocations are per 100,000 records).
func BenchmarkReplayRecords(b *testing.B) {
	const n = 100_000
	records := make([][]byte, n)
	eventType := events.TypeOf(&ticketsv1.TicketUpdated{})
	for i := range records {
		meta := &commonv1.EventMeta{EventId: fmt.Sprintf("evt_%016x", i), WorkspaceId: "ws_1", CommandId: fmt.Sprintf("cmd_%032x", i),
			OccurredAtUnixMs: int64(i), ActorUserId: "user_1", RequestId: fmt.Sprintf("req_%016x", i), RequestDigest: fmt.Sprintf("%032x", i)}
		data, err := proto.Marshal(&ticketsv1.TicketUpdated{Meta: meta, Ticket: benchTicket(i)})
		if err != nil {
			b.Fatal(err)
		}
		records[i] = data
	}
	ctx := context.Background()
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			m := NewLoadingIndex()
			for seq, data := range records {
				ev, err := events.Decode(eventType, data)
				if err != nil {
					b.Fatal(err)
				}
				t, _ := events.StateOf[*ticketsv1.Ticket](ev)
				if err := m.Put(ctx, uint64(seq+1), t); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/record")
	})
	b.Run("encoded", func(b *testing.B) {
		for b.Loop() {
			m := NewLoadingIndex()
			for seq, data := range records {
				ticket, ok, err := events.StateBytes[*ticketsv1.Ticket](eventType, data)
				if !ok || err != nil {
					b.Fatal(ok, err)
				}
				if err := m.PutEncoded(ctx, uint64(seq+1), ticket); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/record")
	})
}

// Writes as a live platform makes them (benchLiveIndex), and as a QA
// worker does, each ticket at its run's time, anywhere among the others
// (go test -bench IndexPut).
func BenchmarkIndexPut(b *testing.B) {
	const n = 100_000
	b.Run("live", func(b *testing.B) {
		for b.Loop() {
			benchLiveIndex(b, n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/ticket")
	})
	b.Run("anywhere", func(b *testing.B) {
		order := rand.New(rand.NewPCG(5, 6)).Perm(n)
		for b.Loop() {
			m := NewIndex(WithoutSearch())
			for seq, i := range order {
				if err := m.Put(context.Background(), uint64(seq+1), benchTicket(i)); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/ticket")
	})
}
