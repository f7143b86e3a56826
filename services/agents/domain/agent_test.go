package domain

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPromptAndMerge(t *testing.T) {
	cfg := []byte(`{"agent":{"first_message":"Hi"},"tts":{"voice_id":"v"}}`)
	with, err := WithPrompt(cfg, "Be kind")
	if err != nil || PromptOf(with) != "Be kind" || VoiceIDOf(with) != "v" || !strings.Contains(string(with), `"first_message":"Hi"`) {
		t.Fatalf("WithPrompt: %s %v", with, err)
	}
	merged, err := Merge([]byte(`{"a":1,"b":{"c":2,"d":3}}`), []byte(`{"b":{"c":null,"e":4},"f":5}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(merged, &got)
	b := got["b"].(map[string]any)
	if got["a"] != 1.0 || got["f"] != 5.0 || b["d"] != 3.0 || b["e"] != 4.0 || b["c"] != nil {
		t.Fatalf("RFC 7386 merge: %s", merged)
	}
	if ArchivedOf([]byte(`{"archived":true}`)) != true || ArchivedOf(nil) {
		t.Fatal("ArchivedOf")
	}
}

func TestNormalizeWorkflow(t *testing.T) {
	if w, err := NormalizeWorkflow(nil); w != nil || err != nil {
		t.Fatal("absent workflow must stay absent")
	}
	w, err := NormalizeWorkflow([]byte(`{"nodes":{"n1":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(w, &got)
	if got["edges"] == nil || got["prevent_subagent_loops"] != false || got["nodes"].(map[string]any)["n1"] == nil {
		t.Fatalf("workflow defaults: %s", w)
	}
}
