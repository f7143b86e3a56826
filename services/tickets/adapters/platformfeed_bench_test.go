package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// A restart's tail after the snapshot: conversations ended with sealed
// transcripts of 20 turns, their keys in the JetStream key store (on the
// embedded server), applied one after the other (each record read and
// opened in turn, as before the feed) and through the feed (go test -run
// - -bench PlatformTail ./services/tickets/adapters).
func BenchmarkPlatformTail(b *testing.B) {
	ctx := context.Background()
	js := testenv.JetStreamAt(b, testenv.StartNATS(b))
	keys, err := kvkeys.Open(ctx, js, 1, "bench-secret")
	if err != nil {
		b.Fatal(err)
	}
	const n = 2000
	var turns []string
	for i := range 20 {
		turns = append(turns, fmt.Sprintf(`{"role":"user","message":"I want a refund for order %d, the headphones arrived broken and nobody called back","time_in_call_secs":%d}`, i, i*5))
	}
	recs := make([]eventstore.Record, n)
	base := time.Unix(1_800_000_000, 0)
	for i := range recs {
		data := fmt.Sprintf(`{"conversation_id":"conv_%05d","agent_id":"agent_1","transcript":[%s]}`, i, strings.Join(turns, ","))
		sealed, err := convseal.SealData(ctx, keys, "ws_1", json.RawMessage(data))
		if err != nil {
			b.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Second)
		body, _ := json.Marshal(map[string]any{"event": "conversation_ended", "timestamp": at.UTC().Format(time.RFC3339Nano), "data": sealed})
		recs[i] = eventstore.Record{Subject: "platform.evt.ws_1.conversation_ended", Data: body, Time: at, Seq: uint64(i + 1)}
	}
	b.Run("one_by_one", func(b *testing.B) {
		for b.Loop() {
			d := NewDirectory(slog.New(slog.DiscardHandler))
			d.Keys = keys
			for _, rec := range recs {
				ev, ok := parseConversationEvent(rec)
				if ok {
					ev.openSealed(ctx, d.Keys)
					_ = d.Conversations.Record(ctx, rec.Seq, ev.summaryEvent())
				}
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("feed", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithCancel(ctx)
			d := NewDirectory(slog.New(slog.DiscardHandler))
			d.Keys = keys
			feed := newPlatformFeed(ctx, d, nil)
			for _, rec := range recs {
				feed.add(ctx, rec)
			}
			if err := feed.drain(ctx); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
