// Package domain holds the agent rules: what a valid agent is, how the
// spec's flat fields (system_prompt) relate to the public nested
// conversation_config, and how a partial update merges.
package domain

import (
	"encoding/json"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// MaxPromptLen bounds the prompt and, the same way, every string of the
// free-form configurations (conversation_config, platform_settings,
// workflow), which no schema can reach into. The request schemas bound
// the other fields (pkg/api/schemas.yaml).
const MaxPromptLen = 200_000

// PromptOf reads conversation_config.agent.prompt.prompt.
func PromptOf(conversationConfig []byte) string {
	var c struct {
		Agent struct {
			Prompt struct {
				Prompt string `json:"prompt"`
			} `json:"prompt"`
		} `json:"agent"`
	}
	_ = json.Unmarshal(conversationConfig, &c)
	return c.Agent.Prompt.Prompt
}

// VoiceIDOf reads conversation_config.tts.voice_id.
func VoiceIDOf(conversationConfig []byte) string {
	var c struct {
		TTS struct {
			VoiceID string `json:"voice_id"`
		} `json:"tts"`
	}
	_ = json.Unmarshal(conversationConfig, &c)
	return c.TTS.VoiceID
}

// ArchivedOf reads platform_settings.archived.
func ArchivedOf(platformSettings []byte) bool {
	var p struct {
		Archived bool `json:"archived"`
	}
	_ = json.Unmarshal(platformSettings, &p)
	return p.Archived
}

// WithPrompt sets conversation_config.agent.prompt.prompt, keeping the
// rest of the config: system_prompt is the spec's flat view of it.
func WithPrompt(conversationConfig []byte, prompt string) ([]byte, error) {
	patch, _ := json.Marshal(map[string]any{"agent": map[string]any{"prompt": map[string]any{"prompt": prompt}}})
	return Merge(conversationConfig, patch)
}

// Merge applies an RFC 7386 JSON merge patch: the public API updates
// nested configuration partially.
func Merge(doc, patch []byte) ([]byte, error) {
	if len(doc) == 0 {
		doc = []byte("{}")
	}
	if len(patch) == 0 {
		return doc, nil
	}
	return jsonpatch.MergePatch(doc, patch)
}

// workflowDefaults are the keys every workflow in a response must carry
// (the public response model requires them).
var workflowDefaults = []byte(`{"edges":{},"nodes":{},"prevent_subagent_loops":false}`)

// NormalizeWorkflow fills a workflow's required keys; nil stays nil.
func NormalizeWorkflow(raw []byte) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return Merge(workflowDefaults, raw)
}
