package adapters

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// A snapshot of conversations with about 120 distinct words each (a call
// of 10 to 40 turns), from a vocabulary of 20,000 words and an order
// number of their own: what writing and reading it costs per
// conversation (go test ./services/tickets/adapters -run - -bench Snapshot).
func BenchmarkConversationIndexSnapshot(b *testing.B) {
	const n = 50_000
	x := benchIndex(n)
	var buf bytes.Buffer
	if _, err := x.WriteSnapshot(&buf); err != nil { // for read, when run alone
		b.Fatal(err)
	}
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			buf.Reset()
			if _, err := x.WriteSnapshot(&buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/n, "bytes/conversation")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/conversation")
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			y := NewConversationIndex()
			if _, err := y.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/conversation")
	})
}

// benchIndex is an index of n conversations of about 120 distinct words
// each (a call of 10 to 40 turns), from a vocabulary of 20,000 words and
// two order numbers of 900,000, as the million bench's transcripts say.
func benchIndex(n int) *ConversationIndex {
	rng := rand.New(rand.NewPCG(1, 2))
	x := NewConversationIndex()
	vocabulary := make([]string, 20_000)
	for i := range vocabulary {
		vocabulary[i] = fmt.Sprintf("w%d", i)
	}
	for i := range n {
		words := []string{fmt.Sprint(100_000 + rng.IntN(900_000)), fmt.Sprint(100_000 + rng.IntN(900_000))}
		for range 120 {
			words = append(words, vocabulary[int(rng.ExpFloat64()*2000)%len(vocabulary)])
		}
		_ = x.Record(context.Background(), uint64(i+1), app.ConversationEvent{Name: "conversation_ended", WorkspaceID: "ws_1",
			ConversationID: fmt.Sprintf("conv_%07d", i), AgentID: "agent_a", AtMs: 1_800_000_000_000 + int64(i)*1000, Turns: 20,
			CallSuccessful: "success", Evaluations: map[string]string{"resolved": "success"}, Words: app.SearchWords(fmt.Sprint(words))})
	}
	return x
}

// The index's live heap per conversation, as ingested (go test
// ./services/tickets/adapters -run - -bench IndexMemory).
func BenchmarkConversationIndexMemory(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		x := benchIndex(n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/conversation")
		runtime.KeepAlive(x)
	}
}

// A page of 100 from an index of 100,000 conversations: the newest, those
// saying a common word, a rare one, two words at once, and a word with an
// outcome (go test ./services/tickets/adapters -run - -bench IndexPage).
func BenchmarkConversationIndexPage(b *testing.B) {
	x := benchIndex(100_000)
	for _, q := range []struct {
		name  string
		words []string
	}{{"newest", nil}, {"common word", []string{"w10"}}, {"rare word", []string{"w9000"}}, {"two words", []string{"w10", "w2000"}}} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := x.ConversationPage(context.Background(), app.ConversationQuery{WorkspaceID: "ws_1", Words: q.words, Limit: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
