package adapters

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
)

// The analysis conversation_ended reports is kept as it came, a later one
// replaces it (one reporting none clears it), a deletion leaves a
// tombstone, and an analysis of a conversation deleted already is not
// written again; a start, or an analysis of another shape, keeps none.
func TestReportedAnalysisProjection(t *testing.T) {
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	project := ReportedProjection(keys, func(ws, conv string) bool { return ws == "ws1" && conv == "c2" })
	at := time.Unix(1_800_000_000, 0)
	analysis := map[string]any{
		"evaluation_criteria_results": map[string]any{"resolved": map[string]any{"criteria_id": "resolved", "result": "success", "rationale": "It was."}},
		"data_collection_results": map[string]any{"n": map[string]any{"data_collection_id": "n", "value": 42, "rationale": "forty-two"},
			"z": map[string]any{"data_collection_id": "z", "value": nil}},
	}
	doc := func(event string, data map[string]any) (string, any) {
		t.Helper()
		id, d, err := project(ctx, platformRecord(t, "ws1", event, at, data))
		if err != nil {
			t.Fatal(err)
		}
		return id, d
	}
	id, got := doc("conversation_ended", map[string]any{"conversation_id": "c1", "analysis": analysis})
	want, _ := json.Marshal(analysis)
	if d, ok := got.(ReportedDoc); id != "ws1/c1" || !ok || d.Analysis != string(want) || d.Deleted {
		t.Fatalf("ended: %q %+v, want the analysis as it came %s", id, got, want)
	}
	if id, got = doc("conversation_ended", map[string]any{"conversation_id": "c1"}); id != "ws1/c1" || got.(ReportedDoc).Analysis != "" {
		t.Fatalf("ended again, reporting none: %q %+v, want it cleared", id, got)
	}
	if id, got = doc("conversation_ended", map[string]any{"conversation_id": "c1", "analysis": map[string]any{"transcript_summary": 7}}); got.(ReportedDoc).Analysis != "" {
		t.Fatalf("an analysis of another shape: %q %+v, want none kept", id, got)
	}
	if id, _ = doc("conversation_started", map[string]any{"conversation_id": "c1"}); id != "" {
		t.Fatalf("a start wrote %q", id)
	}
	if _, got = doc(ConversationDeletedEvent, map[string]any{"conversation_id": "c1"}); !got.(ReportedDoc).Deleted {
		t.Fatalf("deleted: %+v, want a tombstone", got)
	}
	if id, _ = doc("conversation_ended", map[string]any{"conversation_id": "c2", "analysis": analysis}); id != "" {
		t.Fatalf("a deleted conversation's analysis, replayed: written to %q", id)
	}

	// Sealed at ingest: opened with the conversation's key; once the key
	// is destroyed, a replay leaves a tombstone.
	sealed, err := convseal.SealData(ctx, keys, "ws1", json.RawMessage(`{"conversation_id":"c3","analysis":`+string(want)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "forty-two") {
		t.Fatalf("sealed data holds the analysis in the clear: %s", sealed)
	}
	var data map[string]any
	if err := json.Unmarshal(sealed, &data); err != nil {
		t.Fatal(err)
	}
	if _, got = doc("conversation_ended", data); got.(ReportedDoc).Analysis != string(want) {
		t.Fatalf("sealed: %+v, want the analysis opened", got)
	}
	if err := keys.Shred(ctx, "ws1", "c3"); err != nil {
		t.Fatal(err)
	}
	if _, got = doc("conversation_ended", data); !got.(ReportedDoc).Deleted {
		t.Fatalf("sealed, its key destroyed: %+v, want a tombstone", got)
	}
}
