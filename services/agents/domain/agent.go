// Package domain holds the agent rules: what a valid agent is, how the
// spec's flat fields (system_prompt) relate to the public nested
// conversation_config, and how a partial update merges.
package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// Limits on agent fields.
const (
	MaxNameLen   = 256
	MaxPromptLen = 200_000
	MaxTags      = 50
	MaxTagLen    = 64
)

// AgentTypes known to the platform; the spec shows "business".
var AgentTypes = []string{"business", "personal", "support", "sales", "other"}

// Problem is a rule violation located in the request body.
type Problem struct {
	Loc []any
	Msg string
}

// CheckName validates an agent name.
func CheckName(name string) *Problem {
	if strings.TrimSpace(name) == "" {
		return &Problem{Loc: []any{"name"}, Msg: "String should have at least 1 character"}
	}
	if utf8.RuneCountInString(name) > MaxNameLen { // characters, as the message says
		return &Problem{Loc: []any{"name"}, Msg: fmt.Sprintf("String should have at most %d characters", MaxNameLen)}
	}
	return nil
}

// CheckTags validates tags.
func CheckTags(tags []string) *Problem {
	if len(tags) > MaxTags {
		return &Problem{Loc: []any{"tags"}, Msg: fmt.Sprintf("At most %d tags", MaxTags)}
	}
	for i, t := range tags {
		if strings.TrimSpace(t) == "" || utf8.RuneCountInString(t) > MaxTagLen {
			return &Problem{Loc: []any{"tags", i}, Msg: fmt.Sprintf("A tag has 1 to %d characters", MaxTagLen)}
		}
	}
	return nil
}

// CheckAgentType validates agent_type (empty = not given).
func CheckAgentType(t string) *Problem {
	if t == "" {
		return nil
	}
	for _, k := range AgentTypes {
		if t == k {
			return nil
		}
	}
	return &Problem{Loc: []any{"agent_type"}, Msg: "Input should be one of " + strings.Join(AgentTypes, ", ")}
}

// CheckObject makes sure a config blob is a JSON object (or absent).
func CheckObject(raw json.RawMessage, field string) *Problem {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return &Problem{Loc: []any{field}, Msg: "Input should be an object"}
	}
	return nil
}

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
