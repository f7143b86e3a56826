package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ResponsesPath is the Responses API path the server answers when its
// Stream says Responses.
const ResponsesPath = "/v1/responses"

// Stream makes a server answer every 2xx completion as server-sent events,
// whatever the request's "stream" says, as the ElevenLabs custom-LLM
// guide's example server does: a first chunk with the role, one chunk per
// word of the content (a leading space kept with its word), the tool calls
// (name, then the arguments in two halves), a chunk with finish_reason, a
// chunk with usage, then "data: [DONE]". With Responses set the server
// answers POST /v1/responses instead and writes the Responses API's events
// (response.created, response.output_text.delta, ...,
// response.completed).
//
// The other fields inject a fault; chunk counts include the first chunk.
type Stream struct {
	Responses bool
	// The first chunk is sent First after the headers, and chunk k (from
	// 1) at First + (k-1)·Gap: a fixed schedule, so that a late timer does
	// not delay the chunks after it.
	First, Gap time.Duration
	// NoRoleChunk: the first chunk carries the first word (no chunk with
	// the role and empty content before it).
	NoRoleChunk bool
	// NoEnd closes the stream cleanly without "[DONE]" (or
	// response.completed).
	NoEnd bool
	// StallAfter n: after n chunks nothing more is sent; the connection
	// stays open until the client goes or the server closes.
	StallAfter int
	// CutAfter n: after n chunks the connection is aborted.
	CutAfter int
	// MalformedAt n: chunk n is "data: {not json".
	MalformedAt int
	// ErrorAfter n: after n chunks an error event with ErrorMessage, and
	// nothing more.
	ErrorAfter   int
	ErrorMessage string
	// Endless: the content never ends (a word per Gap) until the client
	// goes.
	Endless bool
}

// SetStream makes the server answer as st says (nil: JSON bodies again).
func (s *Server) SetStream(st *Stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream = st
}

func (s *Server) streamPlan() *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream
}

// words splits content into the pieces a model would stream.
func words(content string) []string {
	var out []string
	for len(content) > 0 {
		i := strings.IndexByte(content[1:], ' ')
		if i < 0 {
			out = append(out, content)
			break
		}
		out = append(out, content[:i+1])
		content = content[i+1:]
	}
	return out
}

// writeStream writes c as events; it returns when done, the client went,
// or the plan stalls (then when the client goes).
func writeStream(ctx context.Context, w http.ResponseWriter, st *Stream, c Completion) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	t0 := time.Now()
	wait := func(until time.Time) bool {
		d := time.Until(until)
		if d <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	var events []string // data of each event, "event: x\ndata: y" for a named one
	if st.Responses {
		events = responsesEvents(c)
	} else {
		events = chatEvents(c)
	}
	if st.NoRoleChunk {
		events = events[1:]
	}
	sent := 0
	send := func(ev string) bool {
		if !wait(t0.Add(st.First + time.Duration(max(sent, 0))*st.Gap)) {
			return false
		}
		switch {
		case st.StallAfter > 0 && sent == st.StallAfter:
			<-ctx.Done()
			return false
		case st.CutAfter > 0 && sent == st.CutAfter:
			panic(http.ErrAbortHandler)
		case st.ErrorAfter > 0 && sent == st.ErrorAfter:
			msg := st.ErrorMessage
			if msg == "" {
				msg = "the model overloaded"
			}
			if st.Responses {
				b, _ := json.Marshal(map[string]any{"type": "error", "code": "server_error", "message": msg})
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
			} else {
				b, _ := json.Marshal(ErrorBody{Error: ErrorDetail{Message: msg, Type: "server_error"}})
				fmt.Fprintf(w, "data: %s\n\n", b)
			}
			flush()
			return false
		}
		sent++
		if st.MalformedAt == sent {
			ev = "data: {not json"
		}
		if _, err := fmt.Fprintf(w, "%s\n\n", ev); err != nil {
			return false
		}
		flush()
		return true
	}
	last := len(events) - 1 // the end: [DONE] or response.completed
	for _, ev := range events[:last] {
		if !send(ev) {
			return
		}
		if st.Endless && strings.Contains(ev, "delta") && sent > 1 {
			more := Completion{Choices: []Choice{{Message: Message{Content: " more"}}}}
			piece := chatEvents(more)[1]
			if st.Responses {
				piece = responsesEvents(more)[1]
			}
			for send(piece) {
			}
			return
		}
	}
	if st.NoEnd {
		return
	}
	send(events[last])
}

func data(v any) string {
	b, _ := json.Marshal(v)
	return "data: " + string(b)
}

func chatEvents(c Completion) []string {
	chunk := func(delta map[string]any, finish any) string {
		return data(map[string]any{"id": c.ID, "object": "chat.completion.chunk", "created": c.Created, "model": c.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	out := []string{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	var msg Message
	finish := "stop"
	if len(c.Choices) > 0 {
		msg, finish = c.Choices[0].Message, c.Choices[0].FinishReason
	}
	for _, w := range words(msg.Content) {
		out = append(out, chunk(map[string]any{"content": w}, nil))
	}
	for i, tc := range msg.ToolCalls {
		out = append(out, chunk(map[string]any{"tool_calls": []map[string]any{{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": ""}}}}, nil))
		half := len(tc.Function.Arguments) / 2
		for _, part := range []string{tc.Function.Arguments[:half], tc.Function.Arguments[half:]} {
			out = append(out, chunk(map[string]any{"tool_calls": []map[string]any{{"index": i, "function": map[string]any{"arguments": part}}}}, nil))
		}
	}
	out = append(out, chunk(map[string]any{}, finish))
	if c.Usage != nil {
		out = append(out, data(map[string]any{"id": c.ID, "object": "chat.completion.chunk", "model": c.Model, "choices": []any{}, "usage": c.Usage}))
	}
	return append(out, "data: [DONE]")
}

func responsesEvents(c Completion) []string {
	ev := func(typ string, fields map[string]any) string {
		fields["type"] = typ
		b, _ := json.Marshal(fields)
		return "event: " + typ + "\ndata: " + string(b)
	}
	var msg Message
	if len(c.Choices) > 0 {
		msg = c.Choices[0].Message
	}
	resp := map[string]any{"id": "resp_" + c.ID, "object": "response", "model": c.Model, "status": "in_progress"}
	out := []string{ev("response.created", map[string]any{"response": resp})}
	for _, w := range words(msg.Content) {
		out = append(out, ev("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": w}))
	}
	for i, tc := range msg.ToolCalls {
		item := "fc_" + tc.ID
		out = append(out, ev("response.output_item.added", map[string]any{"output_index": i + 1,
			"item": map[string]any{"type": "function_call", "id": item, "call_id": tc.ID, "name": tc.Function.Name, "arguments": ""}}))
		half := len(tc.Function.Arguments) / 2
		for _, part := range []string{tc.Function.Arguments[:half], tc.Function.Arguments[half:]} {
			out = append(out, ev("response.function_call_arguments.delta", map[string]any{"item_id": item, "output_index": i + 1, "delta": part}))
		}
		out = append(out, ev("response.function_call_arguments.done", map[string]any{"item_id": item, "output_index": i + 1, "arguments": tc.Function.Arguments}))
	}
	done := map[string]any{"id": "resp_" + c.ID, "object": "response", "model": c.Model, "status": "completed"}
	if c.Usage != nil {
		done["usage"] = map[string]any{"input_tokens": c.Usage.PromptTokens, "output_tokens": c.Usage.CompletionTokens, "total_tokens": c.Usage.TotalTokens}
	}
	return append(out, ev("response.completed", map[string]any{"response": done}))
}

// responsesRequest decodes a Responses API request into the chat request
// a Handler reads: input items as messages, text.format json_object as
// response_format, max_output_tokens as max_tokens.
func responsesRequest(body []byte, into *ChatRequest) error {
	var r struct {
		Model        string          `json:"model"`
		Input        json.RawMessage `json:"input"`
		Instructions string          `json:"instructions"`
		Tools        []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"tools"`
		Temperature     *float64 `json:"temperature"`
		MaxOutputTokens *int     `json:"max_output_tokens"`
		Text            *struct {
			Format ResponseFormat `json:"format"`
		} `json:"text"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	*into = ChatRequest{Model: r.Model, Temperature: r.Temperature, MaxTokens: r.MaxOutputTokens, Stream: r.Stream}
	if r.Text != nil {
		f := r.Text.Format
		into.ResponseFormat = &f
	}
	if r.Instructions != "" {
		into.Messages = append(into.Messages, Message{Role: "system", Content: r.Instructions})
	}
	var text string
	if json.Unmarshal(r.Input, &text) == nil {
		into.Messages = append(into.Messages, Message{Role: "user", Content: text})
	} else {
		var items []struct {
			Type      string `json:"type"`
			Role      string `json:"role"`
			Content   string `json:"content"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Output    string `json:"output"`
		}
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return fmt.Errorf("input: %w", err)
		}
		for _, it := range items {
			switch it.Type {
			case "function_call":
				into.Messages = append(into.Messages, Message{Role: "assistant", ContentNull: true, ToolCalls: []MessageToolCall{{
					ID: it.CallID, Type: "function", Function: FunctionCall{Name: it.Name, Arguments: it.Arguments}}}})
			case "function_call_output":
				into.Messages = append(into.Messages, Message{Role: "tool", ToolCallID: it.CallID, Content: it.Output})
			default:
				into.Messages = append(into.Messages, Message{Role: it.Role, Content: it.Content})
			}
		}
	}
	for _, t := range r.Tools {
		into.Tools = append(into.Tools, Tool{Type: "function", Function: FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	return nil
}
