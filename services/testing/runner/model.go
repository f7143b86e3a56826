// Package runner executes test runs: it plays the agent's next turn from
// its configuration and the test's chat history through a model, then
// judges the reply; a simulation test plays a whole conversation with a
// simulated user (simulate.go). Workers take run jobs from the job queue
// (worker.go); the model clients are package modelclient's.
package runner

import (
	"regexp"
	"strings"

	"github.com/voiceai-platform/voiceai/services/testing/model"
	"github.com/voiceai-platform/voiceai/services/testing/modelclient"
)

// The types models speak are package model's (the offline model and the
// model clients implement model.Model); the runner names them as its own.
type (
	Tool          = model.Tool
	Call          = model.Call
	Turn          = model.Turn
	Conversation  = model.Conversation
	JudgeInput    = model.JudgeInput
	UserInput     = model.UserInput
	UserTurn      = model.UserTurn
	Verdict       = model.Verdict
	Usage         = model.Usage
	Model         = model.Model
	Deterministic = model.Deterministic
	AgentModel    = model.AgentModel
	AgentModels   = model.AgentModels
	AgentConfig   = model.AgentConfig
	ResponseCache = model.ResponseCache
	Cacheable     = model.Cacheable
)

// OpenAI is the chat-completions model client (modelclient.OpenAI), named
// here too for the tools that judge through it.
type OpenAI = modelclient.OpenAI

// ParseAgentConfig reads an agent's conversation_config (model.ParseAgentConfig).
func ParseAgentConfig(conversationConfig []byte) AgentConfig {
	return model.ParseAgentConfig(conversationConfig)
}

// IsEndpointError reports whether err is an agent endpoint's failure.
func IsEndpointError(err error) bool { return model.IsEndpointError(err) }

var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_\-.]+)\s*\}\}`)

// Substitute replaces {{name}} with the variable's value; unknown
// variables stay as written, so a missing one is visible in the reply.
func Substitute(s string, vars map[string]string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.TrimSpace(m[2 : len(m)-2])
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}
