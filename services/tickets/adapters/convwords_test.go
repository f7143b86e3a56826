package adapters

import (
	"context"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// The search words live in lists apart from the entries: they follow a
// conversation whose start arrives after its end (a new position), a
// transcript handed over again (the old words go), and a deletion.
func TestSearchWordsFollowEveryChange(t *testing.T) {
	x := NewConversationIndex()
	ctx := context.Background()
	base := time.Unix(1_800_000_000, 0)
	apply := func(seq uint64, event, conv string, at time.Time, message string) {
		data := map[string]any{"conversation_id": conv, "agent_id": "agent_a"}
		if message != "" {
			data["transcript"] = []any{map[string]any{"role": "user", "message": message}}
		}
		ev, ok := parseConversationEvent(platformRecord(t, "ws1", event, at, data))
		if !ok {
			t.Fatalf("%s %s not parsed", event, conv)
		}
		if err := x.Record(ctx, seq, ev.summaryEvent()); err != nil {
			t.Fatal(err)
		}
	}
	search := func(words ...string) string {
		t.Helper()
		rows, _, err := x.ConversationPage(ctx, app.ConversationQuery{WorkspaceID: "ws1", Limit: 10, Words: words})
		if err != nil {
			t.Fatal(err)
		}
		return pageIDs(rows)
	}
	apply(1, "conversation_started", "c1", base, "")
	apply(2, "conversation_ended", "c1", base.Add(time.Minute), "My refund was denied")
	apply(3, "conversation_started", "c2", base.Add(time.Second), "")
	apply(4, "conversation_ended", "c2", base.Add(2*time.Minute), "Where is my bag")
	// c3 ends first; its start, older than c1's, arrives later and moves it.
	apply(5, "conversation_ended", "c3", base.Add(3*time.Minute), "Refund my bag please")
	if got := search("my"); got != "c3,c2,c1" {
		t.Fatalf("my: %q, want c3,c2,c1", got)
	}
	apply(6, "conversation_started", "c3", base.Add(-time.Second), "")
	if got := search("my"); got != "c2,c1,c3" {
		t.Fatalf("my after c3's late start: %q, want c2,c1,c3", got)
	}
	if got := search("refund", "bag"); got != "c3" {
		t.Fatalf("refund bag: %q, want c3", got)
	}
	// A transcript handed over again replaces the words.
	apply(7, "conversation_ended", "c1", base.Add(time.Minute), "Thanks for the help")
	if got := search("refund"); got != "c3" {
		t.Fatalf("refund after c1's new transcript: %q, want c3", got)
	}
	if got := search("thanks"); got != "c1" {
		t.Fatalf("thanks: %q, want c1", got)
	}
	// An end without a transcript keeps them.
	apply(8, "conversation_ended", "c1", base.Add(time.Minute), "")
	if got := search("help"); got != "c1" {
		t.Fatalf("help after an end without transcript: %q, want c1", got)
	}
	if err := x.ForgetConversation(ctx, "ws1", "c3"); err != nil {
		t.Fatal(err)
	}
	if got := search("bag"); got != "c2" {
		t.Fatalf("bag after c3's deletion: %q, want c2", got)
	}
	if _, ok := x.words["ws1"]["please"]; ok {
		t.Fatal("a word only the deleted conversation said still has a list")
	}
}
