package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// A conversation_ended's transcript is published sealed under its
// conversation's key, never in the clear; once the key is shredded a
// transcript handed over again is not published at all.
func TestIngestSealsTranscripts(t *testing.T) {
	f := newFixture(t)
	keys := convseal.NewMemoryKeys()
	f.app.TranscriptKeys = keys
	ctx := context.Background()
	in := domain.IngestInput{Event: "conversation_ended", Data: json.RawMessage(
		`{"conversation_id":"conv_1","agent_id":"agent_1","transcript":[{"role":"user","message":"my secret address"}]}`)}
	caller := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}}
	if _, err := f.app.Ingest(ctx, caller, in); err != nil {
		t.Fatal(err)
	}
	evs := f.queue.Events()
	if len(evs) != 1 || strings.Contains(string(evs[0].Body), "secret address") {
		t.Fatalf("published: %s", evs[0].Body)
	}
	var env wire.Envelope
	var data struct {
		Sealed string `json:"transcript_sealed"`
		Turns  int    `json:"transcript_turns"`
	}
	if err := json.Unmarshal(evs[0].Body, &env); err != nil || json.Unmarshal(env.Data, &data) != nil || data.Turns != 1 {
		t.Fatalf("envelope %s", evs[0].Body)
	}
	got, err := convseal.OpenTranscript(ctx, keys, "ws_a", "conv_1", data.Sealed)
	if err != nil || !strings.Contains(string(got), "secret address") {
		t.Fatalf("opened %s, %v", got, err)
	}

	if err := keys.Shred(ctx, "ws_a", "conv_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.Ingest(ctx, caller, in); err != nil {
		t.Fatal(err)
	}
	if evs = f.queue.Events(); len(evs) != 2 || strings.Contains(string(evs[1].Body), "transcript") {
		t.Fatalf("after the shred, published: %s", evs[1].Body)
	}
}
