// Package model is what the models of agent testing speak: the turns of
// a conversation, what a judge decides on and what it decides, what a
// call cost, and the Model interface that plays the agent, the simulated
// user and the judge. The runner drives models through it; the offline
// model and the model clients implement it.
package model

import (
	"context"
	"encoding/json"
	"strings"
)

// Tool is a tool the agent may call.
type Tool struct {
	ID          string
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments
}

// Call is a tool call made by the agent.
type Call struct {
	ID        string
	Name      string
	Arguments string // JSON object
}

// Turn is one message of a conversation. A "tool" turn is the result
// (Text) of the agent's call ToolCallID to ToolName.
type Turn struct {
	Role       string // "system", "user", "agent" or "tool"
	Text       string
	Calls      []Call
	ToolCallID string
	ToolName   string // a tool turn: the tool called
	IsError    bool   // a tool turn: the call failed and Text says why
}

// Empty tells whether an agent's turn says nothing at all: no text but
// white space and no call. Such an answer came, but no first token with it.
func (t Turn) Empty() bool { return strings.TrimSpace(t.Text) == "" && len(t.Calls) == 0 }

// Said is what the turn says: its text and each call it makes (name and
// arguments), as a judge reads it.
func (t Turn) Said() string {
	var b strings.Builder
	b.WriteString(t.Text)
	for _, c := range t.Calls {
		b.WriteString(" ")
		b.WriteString(c.Name)
		b.WriteString(" ")
		b.WriteString(c.Arguments)
	}
	return b.String()
}

// Conversation is what the agent model answers.
type Conversation struct {
	SystemPrompt string
	Turns        []Turn
	Tools        []Tool
	LLM          string // the agent's configured model, informational
}

// JudgeInput is what the judge decides on.
type JudgeInput struct {
	Conditions      []string
	SuccessExamples []string
	FailureExamples []string
	Transcript      []Turn // the conversation before the reply; for a simulation all of it, the reply included
	Reply           Turn   // the agent's reply; for a simulation its last turn
	// Simulation: the whole conversation is under test, and a condition
	// is met when the agent met it at any point of it.
	Simulation bool
}

// UserInput is what the simulated user of a simulation test answers.
type UserInput struct {
	Scenario   string // simulation_scenario: the user's persona and what they want
	Transcript []Turn // the conversation so far, tool turns included
}

// UserTurn is the simulated user's next message, or the end of the
// conversation (Done; Text, if any, is the user's closing words).
type UserTurn struct {
	Text string
	Done bool
}

// Verdict is the judge's decision.
type Verdict struct {
	Result   string // success | failure | unknown
	Messages []string
	Summary  string
}

// Usage is what a model call cost. An answer from the response cache
// costs no call and no tokens: it counts in Cached.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int64
	Calls, Cached                               int32
}

// Add sums usages.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.Calls += o.Calls
	u.Cached += o.Cached
}

// Sub takes o from u.
func (u *Usage) Sub(o Usage) {
	u.PromptTokens -= o.PromptTokens
	u.CompletionTokens -= o.CompletionTokens
	u.TotalTokens -= o.TotalTokens
	u.Calls -= o.Calls
	u.Cached -= o.Cached
}

// Model plays the agent, the simulated user of a simulation test, and
// judges the agent's replies.
type Model interface {
	Provider() string
	ModelName() string
	Respond(ctx context.Context, c Conversation) (Turn, Usage, error)
	SimulateUser(ctx context.Context, in UserInput) (UserTurn, Usage, error)
	Judge(ctx context.Context, in JudgeInput) (Verdict, Usage, error)
}

// Deterministic is implemented by a model that always gives the same
// answer to the same question (the offline model): asking its judge again is
// pointless, so its first verdict stands.
type Deterministic interface{ Deterministic() bool }
