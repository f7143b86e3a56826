package tickets

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// A restart reads the conversation index from its snapshot and replays
// only the platform records after it (and says so in its log). A
// deletion destroys the snapshot's key before it is answered, so the next
// restart does not bring the conversation's words back from it.
func TestRestartReadsTheIndexSnapshot(t *testing.T) {
	ctx, deps := replicaDeps(t)
	start := func(log *testkit.LogBuffer) *Service {
		svcCtx, stop := context.WithCancel(ctx)
		d := deps()
		d.Logger = slog.New(slog.NewTextHandler(log, nil))
		svc, err := Start(svcCtx, d, Config{Secret: "secret", Snapshots: SnapshotConfig{Every: 1}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stop(); _ = svc.Stop() })
		return svc
	}
	do := func(svc *Service, method, path string) (int, string) { return serve(svc, method, path, "") }
	d := deps()
	keys := sealingKeys(t, ctx, d.JS)
	publish := func(id, said string, at time.Time) uint64 {
		t.Helper()
		return publishSealed(t, ctx, d.JS, keys, "conversation_ended", at, fmt.Sprintf(
			`{"conversation_id":%q,"agent_id":"agent_1","transcript":[{"role":"user","message":%q}]}`, id, said))
	}
	search := func(svc *Service, words string) string {
		code, body := do(svc, "GET", "/v1/convai/conversations?search="+words)
		if code != 200 {
			t.Fatalf("search %s: %d %s", words, code, body)
		}
		return body
	}
	snapshots, err := adapters.OpenIndexSnapshots(ctx, d.JS, 1, keys)
	if err != nil {
		t.Fatal(err)
	}
	snapshotAt := func() uint64 {
		newest, err := snapshots.Newest(ctx)
		if err != nil || newest == nil {
			return 0
		}
		seq, _ := strconv.ParseUint(newest.Metadata["platform_seq"], 10, 64)
		return seq
	}

	first := start(&testkit.LogBuffer{})
	at := time.Now().Add(-time.Hour)
	publish("conv_1", "my parcel never arrived", at)
	last := publish("conv_2", "the password is swordfish", at.Add(time.Minute))
	testkit.Eventually(t, 10*time.Second, "a snapshot of both", func() bool { return snapshotAt() >= last })
	if !strings.Contains(search(first, "swordfish"), "conv_2") {
		t.Fatal("conv_2 not found by its words")
	}

	last = publish("conv_3", "parcel arrived broken", at.Add(2*time.Minute))
	var log testkit.LogBuffer
	second := start(&log)
	if got := search(second, "parcel"); !strings.Contains(got, "conv_1") || !strings.Contains(got, "conv_3") {
		t.Fatalf("after the restart, parcel finds %s", got)
	}
	if !strings.Contains(log.String(), "conversation index read from its snapshot") || !strings.Contains(log.String(), "conversations=2") {
		t.Fatalf("the restart did not read the snapshot:\n%s", log.String())
	}

	// The deletion makes the stored snapshot unreadable at once; the next
	// one the snapshotter stores is of the next epoch, without conv_2.
	if code, body := do(second, "DELETE", "/v1/convai/conversations/conv_2"); code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
	store := snapshots
	// Readable now is only a snapshot the snapshotter (every event) has
	// already stored since, of the next epoch.
	readable := adapters.NewConversationIndex()
	if st, ok, err := store.Load(ctx, readable); err != nil || ok && (st.DeletionSeq <= last || !readable.ConversationDeleted("ws_a", "conv_2")) {
		t.Fatalf("the snapshot holding the deleted conversation is readable (%v)", err)
	}
	defer func() { t.Log(log.String()) }() // the snapshotter's account, shown when it fails
	testkit.Eventually(t, 10*time.Second, "a snapshot of the next epoch", func() bool {
		x := adapters.NewConversationIndex()
		st, ok, err := store.Load(ctx, x)
		return err == nil && ok && st.DeletionSeq > last && !x.ConversationDeleted("ws_a", "conv_1") && x.ConversationDeleted("ws_a", "conv_2")
	})
	third := start(&testkit.LogBuffer{})
	if got := search(third, "swordfish"); strings.Contains(got, "conv_2") {
		t.Fatalf("a deleted conversation's words came back: %s", got)
	}
	if got := search(third, "parcel"); !strings.Contains(got, "conv_1") || !strings.Contains(got, "conv_3") {
		t.Fatalf("after the second restart, parcel finds %s", got)
	}
}
