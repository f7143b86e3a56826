package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Response bodies are untrusted: the parser must accept anything without
// panicking and keep what it returns bounded by the input.

type wireResponse struct {
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Message      *wireRespMessage `json:"message"`
	FinishReason json.RawMessage  `json:"finish_reason"`
}

type wireRespMessage struct {
	Role             string             `json:"role"`
	Content          json.RawMessage    `json:"content"`
	ReasoningContent json.RawMessage    `json:"reasoning_content"`
	Reasoning        json.RawMessage    `json:"reasoning"`
	ToolCalls        []wireRespToolCall `json:"tool_calls"`
	Name             json.RawMessage    `json:"name"`
}

type wireRespToolCall struct {
	ID       json.RawMessage `json:"id"`
	Function struct {
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens     float64 `json:"prompt_tokens"`
	CompletionTokens float64 `json:"completion_tokens"`
	TotalTokens      float64 `json:"total_tokens"`
}

// parseResponse parses a 2xx chat-completion body and returns its first
// choice. Errors match ErrMalformedResponse or ErrNoChoices.
func parseResponse(data []byte) (ChatResponse, error) {
	var w wireResponse
	if err := json.Unmarshal(data, &w); err != nil {
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("data:")) {
			return ChatResponse{}, fmt.Errorf("%w: got a server-sent event stream, not JSON", ErrMalformedResponse)
		}
		return ChatResponse{}, fmt.Errorf("%w: %v", ErrMalformedResponse, err)
	}
	if len(w.Choices) == 0 {
		if msg := errorSummary(w.Error); msg != "" {
			return ChatResponse{}, fmt.Errorf("%w: server error in a 2xx body: %s", ErrNoChoices, msg)
		}
		return ChatResponse{}, ErrNoChoices
	}
	ch := w.Choices[0]
	if ch.Message == nil {
		return ChatResponse{}, fmt.Errorf("%w: choice has no message", ErrMalformedResponse)
	}
	m := ch.Message
	content, ok := contentText(m.Content)
	if !ok {
		return ChatResponse{}, fmt.Errorf("%w: message.content is neither a string, null nor an array of parts", ErrMalformedResponse)
	}
	res := ChatResponse{
		Model:        w.Model,
		FinishReason: rawText(ch.FinishReason),
		Message: Message{
			Role:    m.Role,
			Content: content,
			Name:    rawText(m.Name),
		},
		Reasoning: rawText(m.ReasoningContent),
	}
	if res.Reasoning == "" {
		res.Reasoning = rawText(m.Reasoning)
	}
	if res.Message.Role == "" {
		res.Message.Role = RoleAssistant
	}
	for i, tc := range m.ToolCalls {
		call := ToolCall{
			ID:        rawText(tc.ID),
			Name:      rawText(tc.Function.Name),
			Arguments: rawText(tc.Function.Arguments),
		}
		if call.ID == "" {
			call.ID = "call_" + strconv.Itoa(i)
		}
		res.Message.ToolCalls = append(res.Message.ToolCalls, call)
	}
	if len(w.Usage) > 0 {
		var u wireUsage
		if json.Unmarshal(w.Usage, &u) == nil { // usage is informative: ignore a malformed one
			res.Usage = Usage{
				PromptTokens:     tokenCount(u.PromptTokens),
				CompletionTokens: tokenCount(u.CompletionTokens),
				TotalTokens:      tokenCount(u.TotalTokens),
			}
			if res.Usage.TotalTokens == 0 {
				res.Usage.TotalTokens = res.Usage.PromptTokens + res.Usage.CompletionTokens
			}
		}
	}
	return res, nil
}

func tokenCount(f float64) int {
	if f <= 0 || math.IsNaN(f) {
		return 0
	}
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(f)
}

// contentText decodes message.content: a string, null/absent, or an array
// of parts of which the "text" ones are concatenated.
func contentText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case '[':
		var parts []struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(raw, &parts) != nil {
			return "", false
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "" {
				b.WriteString(rawText(p.Text))
			}
		}
		return b.String(), true
	}
	return "", false
}

// rawText renders a JSON value as text: a string is unquoted, null or
// absent is "", anything else is its compact JSON.
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	// Compact does not check UTF-8: what an endpoint streamed may hold
	// any bytes, and a text that is not UTF-8 cannot be stored.
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return strings.ToValidUTF8(b.String(), "\uFFFD")
	}
	return strings.ToValidUTF8(string(raw), "\uFFFD")
}

func errorSummary(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var obj struct {
		Message json.RawMessage `json:"message"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		if s := rawText(obj.Message); s != "" {
			return truncate(s, 512)
		}
	}
	return truncate(rawText(raw), 512)
}

// parseAPIError builds an APIError from a non-2xx answer. It understands
//
//	{"error":{"message":..,"type":..,"code":..}}  OpenAI, llama.cpp, vLLM
//	{"error":"message"}                          Ollama
//	{"object":"error","message":..,"type":..,"code":400}  older vLLM
//	{"detail":..}                                FastAPI-based servers
//
// and otherwise keeps the start of the body as the message.
func parseAPIError(status int, h http.Header, body []byte, now time.Time) *APIError {
	e := &APIError{StatusCode: status, RequestID: h.Get("x-request-id")}
	if d, ok := retryAfter(h, now); ok {
		e.RetryAfter = d
	}
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &top) == nil {
		errRaw := bytes.TrimSpace(top.Error)
		var inner struct {
			Message json.RawMessage `json:"message"`
			Type    json.RawMessage `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		switch {
		case len(errRaw) > 0 && errRaw[0] == '{' && json.Unmarshal(errRaw, &inner) == nil:
			e.Message, e.Type, e.Code = rawText(inner.Message), rawText(inner.Type), rawText(inner.Code)
		case len(errRaw) > 0 && string(errRaw) != "null":
			e.Message = rawText(errRaw)
		case len(top.Message) > 0:
			e.Message, e.Type, e.Code = rawText(top.Message), rawText(top.Type), rawText(top.Code)
		case len(top.Detail) > 0:
			e.Message = rawText(top.Detail)
		}
	}
	if e.Message == "" && e.Type == "" && e.Code == "" {
		e.Message = strings.TrimSpace(string(trimmed))
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
	}
	e.Message = truncate(e.Message, 1024)
	e.Type = truncate(e.Type, 128)
	e.Code = truncate(e.Code, 128)
	return e
}

func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// maxRetryAfter bounds a parsed delay so that conversions cannot overflow.
const maxRetryAfter = 24 * time.Hour

// retryAfter returns the delay asked for by "retry-after-ms" (preferred) or
// "Retry-After" (delta-seconds, fractional accepted, or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(ms) && !math.IsInf(ms, 0) && ms >= 0 {
			return clampDelay(ms / 1000), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 {
			return 0, false
		}
		return clampDelay(secs), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		return max(0, min(d, maxRetryAfter)), true
	}
	return 0, false
}

func clampDelay(secs float64) time.Duration {
	if secs >= maxRetryAfter.Seconds() {
		return maxRetryAfter
	}
	return time.Duration(secs * float64(time.Second))
}
