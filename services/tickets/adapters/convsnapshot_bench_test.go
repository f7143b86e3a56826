package adapters

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// A snapshot of conversations with about 120 distinct words each (a call
// of 10 to 40 turns), from a vocabulary of 20,000 words and an order
// number of their own: what writing and reading it costs per
// conversation (go test ./services/tickets/adapters -run - -bench Snapshot).
func BenchmarkConversationIndexSnapshot(b *testing.B) {
	const n = 50_000
	rng := rand.New(rand.NewPCG(1, 2))
	x := NewConversationIndex()
	vocabulary := make([]string, 20_000)
	for i := range vocabulary {
		vocabulary[i] = fmt.Sprintf("w%d", i)
	}
	for i := range n {
		words := []string{fmt.Sprintf("order%07d", i)}
		for range 120 {
			words = append(words, vocabulary[int(rng.ExpFloat64()*2000)%len(vocabulary)])
		}
		_ = x.Record(context.Background(), uint64(i+1), app.ConversationEvent{Name: "conversation_ended", WorkspaceID: "ws_1",
			ConversationID: fmt.Sprintf("conv_%07d", i), AgentID: "agent_a", AtMs: 1_800_000_000_000 + int64(i)*1000, Turns: 20,
			CallSuccessful: "success", Evaluations: map[string]string{"resolved": "success"}, Words: app.SearchWords(fmt.Sprint(words))})
	}
	var buf bytes.Buffer
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
