package convseal_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/convseal/convsealtest"
)

const secretLine = "my card number is 4111 1111"

var transcript = json.RawMessage(`[{"role":"user","message":"` + secretLine + `"},{"role":"agent","message":"noted"}]`)

func TestSealOpensOnlyUnchangedForItsConversation(t *testing.T) {
	key, err := convseal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := convseal.Seal(key, "ws_1", "conv_1", transcript)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "card") {
		t.Fatal("sealed text holds the plaintext")
	}
	got, err := convseal.Open(key, "ws_1", "conv_1", sealed)
	if err != nil || string(got) != string(transcript) {
		t.Fatalf("Open = %s, %v; want the transcript", got, err)
	}

	raw, _ := base64.StdEncoding.DecodeString(sealed)
	raw[len(raw)-1] ^= 1
	tampered := base64.StdEncoding.EncodeToString(raw)
	if _, err := convseal.Open(key, "ws_1", "conv_1", tampered); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("a changed byte: err = %v, want ErrTampered", err)
	}
	for _, c := range []struct{ ws, conv string }{{"ws_2", "conv_1"}, {"ws_1", "conv_2"}} {
		if _, err := convseal.Open(key, c.ws, c.conv, sealed); !errors.Is(err, convseal.ErrTampered) {
			t.Errorf("moved to %s/%s: err = %v, want ErrTampered", c.ws, c.conv, err)
		}
	}
	other, _ := convseal.NewKey()
	if _, err := convseal.Open(other, "ws_1", "conv_1", sealed); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("another key: err = %v, want ErrTampered", err)
	}
	if _, err := convseal.Open(key, "ws_1", "conv_1", "not base64!"); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("not base64: err = %v, want ErrTampered", err)
	}
	if _, err := convseal.Open(key, "ws_1", "conv_1", "AAAA"); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("too short: err = %v, want ErrTampered", err)
	}
}

// Opened in place, the sealed bytes become the transcript's, and a
// changed byte is refused as by Open.
func TestOpenInPlace(t *testing.T) {
	key, _ := convseal.NewKey()
	sealed, err := convseal.Seal(key, "ws_1", "conv_1", transcript)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(sealed)
	got, err := convseal.OpenInPlace(key, "ws_1", "conv_1", raw)
	if err != nil || string(got) != string(transcript) {
		t.Fatalf("OpenInPlace = %s, %v; want the transcript", got, err)
	}
	if &got[0] != &raw[12] { // after the GCM nonce
		t.Error("the transcript is not in the sealed bytes' memory")
	}
	raw, _ = base64.StdEncoding.DecodeString(sealed)
	raw[len(raw)-1] ^= 1
	if _, err := convseal.OpenInPlace(key, "ws_1", "conv_1", raw); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("a changed byte: err = %v, want ErrTampered", err)
	}
}

func TestMemoryKeys(t *testing.T) { convsealtest.Keys(t, convseal.NewMemoryKeys()) }

func TestSealDataAndADestroyedKey(t *testing.T) {
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	data := json.RawMessage(`{"conversation_id":"conv_1","agent_id":"agent_1","transcript":` + string(transcript) + `}`)
	sealed, err := convseal.SealData(ctx, keys, "ws_1", data)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "card") {
		t.Fatalf("sealed data holds the plaintext: %s", sealed)
	}
	var fields struct {
		ConversationID string `json:"conversation_id"`
		AgentID        string `json:"agent_id"`
		Sealed         string `json:"transcript_sealed"`
		Turns          int    `json:"transcript_turns"`
		Transcript     any    `json:"transcript"`
	}
	if err := json.Unmarshal(sealed, &fields); err != nil {
		t.Fatal(err)
	}
	if fields.ConversationID != "conv_1" || fields.AgentID != "agent_1" || fields.Turns != 2 || fields.Transcript != nil || fields.Sealed == "" {
		t.Fatalf("sealed data = %s", sealed)
	}
	got, err := convseal.OpenTranscript(ctx, keys, "ws_1", "conv_1", fields.Sealed)
	if err != nil || string(got) != string(transcript) {
		t.Fatalf("OpenTranscript = %s, %v", got, err)
	}

	if err := keys.Shred(ctx, "ws_1", "conv_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := convseal.OpenTranscript(ctx, keys, "ws_1", "conv_1", fields.Sealed); !errors.Is(err, convseal.ErrShredded) {
		t.Fatalf("after the key's destruction: err = %v, want ErrShredded", err)
	}
	// A transcript handed over again for the deleted conversation is
	// not written at all.
	again, err := convseal.SealData(ctx, keys, "ws_1", data)
	if err != nil || strings.Contains(string(again), "transcript") || !strings.Contains(string(again), "agent_1") {
		t.Fatalf("after delete, SealData = %s, %v; want the data without any transcript", again, err)
	}

	for _, bad := range []string{`{"transcript":[{"role":"user"}]}`, `{"conversation_id":"a b","transcript":[{"role":"user"}]}`, `{"conversation_id":7,"transcript":[{"role":"user"}]}`} {
		if out, err := convseal.SealData(ctx, keys, "ws_1", json.RawMessage(bad)); err != nil || strings.Contains(string(out), "transcript") {
			t.Errorf("%s: %s, %v; want no transcript kept (no conversation to key it to)", bad, out, err)
		}
	}
	forged := json.RawMessage(`{"conversation_id":"conv_2","transcript_sealed":"AAAA","transcript_turns":9}`)
	if out, err := convseal.SealData(ctx, keys, "ws_1", forged); err != nil || string(out) != `{"conversation_id":"conv_2"}` {
		t.Errorf("a producer's own sealed fields: %s, %v; want them dropped", out, err)
	}
	plain := json.RawMessage(`{"conversation_id":"conv_2"}`)
	if out, err := convseal.SealData(ctx, keys, "ws_1", plain); err != nil || string(out) != string(plain) {
		t.Errorf("no transcript: %s, %v; want it unchanged", out, err)
	}
	forged = json.RawMessage(`{"conversation_id":"conv_2","analysis_sealed":"AAAA"}`)
	if out, err := convseal.SealData(ctx, keys, "ws_1", forged); err != nil || string(out) != `{"conversation_id":"conv_2"}` {
		t.Errorf("a producer's own sealed analysis: %s, %v; want it dropped", out, err)
	}
}

// A conversation_ended's analysis (a summary of the transcript, reasons,
// data collected from the caller) is sealed as the transcript is, with
// or without one, opens only as what it is, and not once the conversation
// was deleted; one handed over again then is not written.
func TestSealDataSealsTheAnalysis(t *testing.T) {
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	analysis := `{"transcript_summary":"The caller gave card 4111","data_collection_results":{"card":{"value":"4111"}}}`
	data := json.RawMessage(`{"conversation_id":"conv_1","analysis":` + analysis + `}`)
	sealed, err := convseal.SealData(ctx, keys, "ws_1", data)
	if err != nil || strings.Contains(string(sealed), "4111") || strings.Contains(string(sealed), `"analysis"`) {
		t.Fatalf("sealed data %s, %v: the analysis is in the clear", sealed, err)
	}
	var fields struct {
		Sealed []byte `json:"analysis_sealed"` // base64
	}
	if err := json.Unmarshal(sealed, &fields); err != nil || len(fields.Sealed) == 0 {
		t.Fatalf("sealed data %s: %v", sealed, err)
	}
	got, err := convseal.OpenAs(ctx, keys, convseal.KindReportedAnalysis, "ws_1", "conv_1", fields.Sealed)
	if err != nil || string(got) != analysis {
		t.Fatalf("opened %s, %v", got, err)
	}
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", fields.Sealed); !errors.Is(err, convseal.ErrTampered) {
		t.Fatalf("opened as another kind: %v, want ErrTampered", err)
	}
	if out := convseal.WithoutSealed(sealed); strings.Contains(string(out), "analysis") {
		t.Fatalf("a delivery's copy keeps the ciphertext: %s", out)
	}
	if err := keys.Shred(ctx, "ws_1", "conv_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindReportedAnalysis, "ws_1", "conv_1", fields.Sealed); !errors.Is(err, convseal.ErrShredded) {
		t.Fatalf("after the key's destruction: %v, want ErrShredded", err)
	}
	if again, err := convseal.SealData(ctx, keys, "ws_1", data); err != nil || strings.Contains(string(again), "analysis") {
		t.Fatalf("handed over again after the delete: %s, %v; want no analysis written", again, err)
	}
}

// What is sealed of a conversation beyond its transcript opens only as
// the kind it was sealed as, for its conversation, unchanged, and never
// once the conversation is deleted; a deleted conversation gets nothing
// sealed again.
func TestSealAsOpensOnlyItsKindUntilShredded(t *testing.T) {
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	plain := []byte(secretLine)
	sealed, err := convseal.SealAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "card") {
		t.Fatal("sealed bytes hold the plaintext")
	}
	got, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", sealed)
	if err != nil || string(got) != secretLine {
		t.Fatalf("OpenAs = %q, %v; want the plaintext", got, err)
	}
	kept := append([]byte(nil), sealed...)
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", sealed); err != nil || string(sealed) != string(kept) {
		t.Fatalf("opening changed the sealed bytes (%v)", err)
	}
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindTranscript, "ws_1", "conv_1", sealed); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("opened as another kind: err = %v, want ErrTampered", err)
	}
	if _, err := convseal.SealAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_2", plain); err != nil {
		t.Fatal(err)
	}
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_2", sealed); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("moved to another conversation: err = %v, want ErrTampered", err)
	}
	changed := append([]byte(nil), sealed...)
	changed[len(changed)-1] ^= 1
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", changed); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("a changed byte: err = %v, want ErrTampered", err)
	}
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", sealed[:5]); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("too short: err = %v, want ErrTampered", err)
	}
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_none", sealed); !errors.Is(err, convseal.ErrNoKey) {
		t.Errorf("a conversation without a key: err = %v, want ErrNoKey", err)
	}

	if err := keys.Shred(ctx, "ws_1", "conv_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := convseal.OpenAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", sealed); !errors.Is(err, convseal.ErrShredded) {
		t.Errorf("after the delete: err = %v, want ErrShredded", err)
	}
	if _, err := convseal.SealAs(ctx, keys, convseal.KindAnalysis, "ws_1", "conv_1", plain); !errors.Is(err, convseal.ErrShredded) {
		t.Errorf("sealing for a deleted conversation: err = %v, want ErrShredded", err)
	}
}
