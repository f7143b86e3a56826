package llm

import (
	"encoding/json"
	"fmt"
)

// The Responses API request (POST /v1/responses), as custom LLM servers
// on it read it: the conversation as "input" items (messages, the
// assistant's function calls, their outputs), function tools flat.

type wireResponsesRequest struct {
	Model           string              `json:"model"`
	Input           []any               `json:"input"`
	Tools           []wireResponsesTool `json:"tools,omitempty"`
	Temperature     *float64            `json:"temperature,omitempty"`
	MaxOutputTokens int                 `json:"max_output_tokens,omitempty"`
	Text            *wireResponsesText  `json:"text,omitempty"`
	Stream          bool                `json:"stream"`
	Store           bool                `json:"store"`
}

type wireResponsesText struct {
	Format wireResponseFormat `json:"format"`
}

type wireResponsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireInputMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type wireFunctionCallItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireFunctionOutputItem struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

func encodeResponsesRequest(model string, r ChatRequest, stream bool) ([]byte, error) {
	if len(r.Messages) == 0 {
		return nil, fmt.Errorf("%w: no messages", ErrInvalidRequest)
	}
	w := wireResponsesRequest{Model: model, Temperature: r.Temperature, Stream: stream, Input: []any{}}
	if r.MaxTokens > 0 {
		w.MaxOutputTokens = r.MaxTokens
	}
	if r.JSONObject {
		w.Text = &wireResponsesText{Format: wireResponseFormat{Type: "json_object"}}
	}
	for i, m := range r.Messages {
		switch m.Role {
		case "":
			return nil, fmt.Errorf("%w: message %d has no role", ErrInvalidRequest, i)
		case RoleTool:
			w.Input = append(w.Input, wireFunctionOutputItem{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
			continue
		}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			w.Input = append(w.Input, wireInputMessage{Role: m.Role, Content: m.Content})
		}
		for _, tc := range m.ToolCalls {
			w.Input = append(w.Input, wireFunctionCallItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: tc.arguments()})
		}
	}
	for i, t := range r.Tools {
		params, err := toolParameters(i, t)
		if err != nil {
			return nil, err
		}
		w.Tools = append(w.Tools, wireResponsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return b, nil
}
