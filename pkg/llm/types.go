package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrTimeout: the last attempt exceeded Config.Timeout. It does not
	// match context.DeadlineExceeded: that is the caller's own deadline
	// (a run's time limit), and an endpoint that answers too slowly, or
	// trickles its answer, must be told apart from it.
	ErrTimeout = errors.New("llm: attempt timed out")
	// ErrMalformedResponse: a 2xx body that is not a chat completion. Retried.
	ErrMalformedResponse = errors.New("llm: malformed response")
	// ErrNoChoices: a well-formed completion with zero choices. Not retried.
	ErrNoChoices = errors.New("llm: response has no choices")
	// ErrResponseTooLarge: a 2xx body over Config.MaxResponseBytes. Not retried.
	ErrResponseTooLarge = errors.New("llm: response body too large")
	// ErrInvalidRequest: the request could not be built (no messages, a tool
	// without a name, tool parameters that are not JSON). Nothing is sent.
	ErrInvalidRequest = errors.New("llm: invalid request")
)

// ChatRequest is one chat-completion request. The model comes from Config.
type ChatRequest struct {
	Messages []Message
	// Tools are sent as OpenAI "tools": [{"type":"function","function":{...}}].
	Tools       []Tool
	Temperature *float64 // nil: omitted (server default)
	MaxTokens   int      // 0: omitted; sent as "max_tokens"
	JSONObject  bool     // response_format {"type":"json_object"}
	Seed        *int     // nil: omitted
}

// Message is one chat message, sent or received.
type Message struct {
	Role       string     // system | user | assistant | tool
	Content    string     // an assistant message with ToolCalls and no Content is sent with "content": null
	ToolCalls  []ToolCall // assistant messages
	ToolCallID string     // tool messages: the ToolCall.ID answered
	Name       string
}

// ToolCall is one function call asked for by the model.
type ToolCall struct {
	// ID identifies the call; a tool message answers it with ToolCallID.
	// When a server omits it, the parser sets "call_<index>".
	ID string
	// Name is the function name.
	Name string
	// Arguments is the JSON text the model produced, as is (it may be
	// invalid JSON: models make mistakes). A server that sends an object
	// instead of a string gets it re-encoded as compact JSON text.
	Arguments string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is a JSON schema; nil means {"type":"object","properties":{}}.
	Parameters json.RawMessage
}

// Usage is the token accounting reported by the server (zero when it
// reported none).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// ChatResponse is the first choice of a successful completion.
type ChatResponse struct {
	Message      Message
	FinishReason string // stop | length | tool_calls | content_filter | ... ("" when null)
	Usage        Usage  // of the successful response only
	Model        string // as reported by the server
	Attempts     int    // 1 + retries used
	// Reasoning is "reasoning_content" (vLLM, llama.cpp, DeepSeek) or
	// "reasoning" (Ollama) when the server separates it from Content.
	Reasoning string
	// FirstToken is how long after Chat was called (retries included) the
	// first content or tool-call delta of the answer came; for an answer
	// read as one JSON body, when that body had been read whole.
	FirstToken time.Duration
	// Streamed: the answer came as server-sent events.
	Streamed bool
}

// APIError is returned for a non-2xx answer that is final: not retried, or
// retries exhausted. Chat returns it unwrapped.
type APIError struct {
	StatusCode int
	Type       string // error.type, e.g. "invalid_request_error"
	Code       string // error.code as text: a string, a number ("400") or "" for null
	Message    string // error.message, or the start of a non-JSON body
	// RetryAfter is the delay the server asked for ("retry-after-ms" or
	// "Retry-After"), not capped by MaxBackoff; 0 when none.
	RetryAfter time.Duration
	// RequestID is the "x-request-id" response header, if any.
	RequestID string
	// Attempts is the number of attempts Chat made (1 + retries).
	Attempts int
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: API error: HTTP %d", e.StatusCode)
	if e.Type != "" || e.Code != "" {
		b.WriteString(" (")
		b.WriteString(e.Type)
		if e.Type != "" && e.Code != "" {
			b.WriteString(", ")
		}
		if e.Code != "" {
			b.WriteString("code ")
			b.WriteString(e.Code)
		}
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " [after %d attempts]", e.Attempts)
	}
	return b.String()
}

// Temporary reports whether the status is one that is retried: 429 or 5xx.
func (e *APIError) Temporary() bool {
	return e.StatusCode == 429 || (e.StatusCode >= 500 && e.StatusCode <= 599)
}

// ---- wire format of the request ----

type wireRequest struct {
	Model          string              `json:"model"`
	Messages       []wireMessage       `json:"messages"`
	Tools          []wireTool          `json:"tools,omitempty"`
	Temperature    *float64            `json:"temperature,omitempty"`
	MaxTokens      int                 `json:"max_tokens,omitempty"`
	ResponseFormat *wireResponseFormat `json:"response_format,omitempty"`
	Seed           *int                `json:"seed,omitempty"`
	Stream         bool                `json:"stream"`
	StreamOptions  *wireStreamOptions  `json:"stream_options,omitempty"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireResponseFormat struct {
	Type string `json:"type"`
}

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// toolParameters is tool i's parameters schema as sent (an empty object
// schema when it has none); a tool without a name, or whose parameters are
// not JSON, is refused.
func toolParameters(i int, t Tool) (json.RawMessage, error) {
	if t.Name == "" {
		return nil, fmt.Errorf("%w: tool %d has no name", ErrInvalidRequest, i)
	}
	if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
		return emptyObjectSchema, nil
	}
	if !json.Valid(t.Parameters) {
		return nil, fmt.Errorf("%w: parameters of tool %q are not valid JSON", ErrInvalidRequest, t.Name)
	}
	return t.Parameters, nil
}

// arguments are the call's arguments as sent: "{}" when it has none.
func (tc ToolCall) arguments() string {
	if strings.TrimSpace(tc.Arguments) == "" {
		return "{}"
	}
	return tc.Arguments
}

func encodeRequest(model string, r ChatRequest, stream bool) ([]byte, error) {
	if len(r.Messages) == 0 {
		return nil, fmt.Errorf("%w: no messages", ErrInvalidRequest)
	}
	w := wireRequest{
		Model:       model,
		Messages:    make([]wireMessage, len(r.Messages)),
		Temperature: r.Temperature,
		Seed:        r.Seed,
		Stream:      stream,
	}
	if stream {
		w.StreamOptions = &wireStreamOptions{IncludeUsage: true}
	}
	if r.MaxTokens > 0 {
		w.MaxTokens = r.MaxTokens
	}
	if r.JSONObject {
		w.ResponseFormat = &wireResponseFormat{Type: "json_object"}
	}
	for i, m := range r.Messages {
		if m.Role == "" {
			return nil, fmt.Errorf("%w: message %d has no role", ErrInvalidRequest, i)
		}
		wm := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			content := m.Content
			wm.Content = &content
		}
		for _, tc := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{
				ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: tc.arguments()},
			})
		}
		w.Messages[i] = wm
	}
	for i, t := range r.Tools {
		params, err := toolParameters(i, t)
		if err != nil {
			return nil, err
		}
		w.Tools = append(w.Tools, wireTool{
			Type:     "function",
			Function: wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return b, nil
}
