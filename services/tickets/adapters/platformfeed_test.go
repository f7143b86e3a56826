package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// shuffledKeys answers after yielding a random number of times, so the
// feed's readers finish their records out of order.
type shuffledKeys struct{ *convseal.MemoryKeys }

func (k shuffledKeys) Key(ctx context.Context, workspaceID, conversationID string, create bool) ([]byte, error) {
	for range rand.IntN(200) {
		runtime.Gosched()
	}
	return k.MemoryKeys.Key(ctx, workspaceID, conversationID, create)
}

// Records read on several goroutines are applied in their order: each
// conversation ends twice with different words, and only the second
// transcript's words find it, as when applied one by one.
func TestPlatformFeedAppliesRecordsInTheirOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys := shuffledKeys{convseal.NewMemoryKeys()}
	var recs []eventstore.Record
	event := func(conv, name, words string, at time.Time) {
		data := `{"conversation_id":"` + conv + `","agent_id":"agent_1"}`
		if words != "" {
			data = `{"conversation_id":"` + conv + `","agent_id":"agent_1","transcript":[{"role":"user","message":"` + words + `"}]}`
		}
		sealed, err := convseal.SealData(ctx, keys, "ws_1", json.RawMessage(data))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"event": name, "timestamp": at.UTC().Format(time.RFC3339Nano), "data": sealed})
		recs = append(recs, eventstore.Record{Subject: "platform.evt.ws_1." + name, Data: body, Time: at, Seq: uint64(len(recs) + 1)})
	}
	base := time.Unix(1_800_000_000, 0)
	const n = 300
	for i := range n {
		conv := fmt.Sprintf("conv_%03d", i)
		at := base.Add(time.Duration(i) * time.Second)
		event(conv, "conversation_started", "", at)
		event(conv, "conversation_ended", fmt.Sprintf("first%d", i), at.Add(time.Minute))
	}
	for i := range n { // each ends again, later, saying something else
		event(fmt.Sprintf("conv_%03d", i), "conversation_ended", fmt.Sprintf("second%d", i), base.Add(time.Hour))
	}

	d := NewDirectory(slog.New(slog.DiscardHandler))
	d.Keys = keys
	var applied []uint64 // the applier's goroutine only, until drained
	var feed *platformFeed
	feed = newPlatformFeed(ctx, d, func(ctx context.Context, r *pendingRecord) {
		applied = append(applied, r.rec.Seq)
		feed.record(ctx, r)
	})
	for _, rec := range recs {
		feed.add(ctx, rec)
	}
	if err := feed.drain(ctx); err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(recs) || !slices.IsSorted(applied) {
		t.Fatalf("applied %d records in the order %v", len(applied), applied)
	}
	for i := range n {
		for word, want := range map[string]int{fmt.Sprintf("second%d", i): 1, fmt.Sprintf("first%d", i): 0} {
			page, _, err := d.Conversations.ConversationPage(ctx, app.ConversationQuery{WorkspaceID: "ws_1", Words: []string{word}, Limit: 10})
			if err != nil || len(page) != want {
				t.Fatalf("%q finds %d conversations (%v), want %d", word, len(page), err, want)
			}
		}
	}
}
