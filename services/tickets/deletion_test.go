package tickets

import (
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// A conversation deleted through one replica is gone from the other's
// index and from the transcripts they share, once the deletion's record
// reaches it.
func TestDeletionReachesEveryReplica(t *testing.T) {
	ctx, deps := replicaDeps(t)
	var replicas []*Service
	for range 2 {
		svc, err := Start(ctx, deps(), Config{Secret: "secret", Snapshots: SnapshotConfig{Every: 20_000}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop() })
		replicas = append(replicas, svc)
	}
	do := func(svc *Service, method, path string) (int, string) { return serve(svc, method, path, "") }

	// The conversation, its transcript sealed as the API's ingest seals it.
	d := deps()
	keys := sealingKeys(t, ctx, d.JS)
	at := time.Now().Add(-time.Hour)
	for _, ev := range []struct {
		name string
		at   time.Time
		data string
	}{
		{"conversation_started", at, `{"conversation_id":"conv_1","agent_id":"agent_1"}`},
		{"conversation_ended", at.Add(time.Minute), `{"conversation_id":"conv_1","agent_id":"agent_1","transcript":[{"role":"user","message":"my PIN is 4321"}]}`},
	} {
		publishSealed(t, ctx, d.JS, keys, ev.name, ev.at, ev.data)
	}
	for _, svc := range replicas {
		testkit.Eventually(t, 10*time.Second, "the deletion reaches it", func() bool {
			code, body := do(svc, "GET", "/v1/convai/conversations/conv_1")
			return code == 200 && strings.Contains(body, "my PIN is 4321")
		})
	}

	if code, body := do(replicas[0], "DELETE", "/v1/convai/conversations/conv_1"); code != 200 || body != "{}\n" && body != "{}" {
		t.Fatalf("delete: %d %s", code, body)
	}
	for i, svc := range replicas {
		testkit.Eventually(t, 10*time.Second, "the deletion reaches it", func() bool {
			code, _ := do(svc, "GET", "/v1/convai/conversations/conv_1")
			_, list := do(svc, "GET", "/v1/convai/conversations")
			return code == 404 && !strings.Contains(list, "conv_1")
		})
		if code, _ := do(svc, "DELETE", "/v1/convai/conversations/conv_1"); code != 404 {
			t.Errorf("replica %d: a second delete answers %d", i, code)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the deletion reaches it", func() bool {
		got, err := adapters.OpenTranscripts(d.Database(Name)).Transcript(ctx, "ws_a", "conv_1")
		return err == nil && got == nil
	})
}
