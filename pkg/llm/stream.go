package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrStream matches every *StreamError.
var ErrStream = errors.New("llm: stream failed")

// StreamError is a streamed answer that went wrong after it began: it is
// never retried (the endpoint has started answering; asking again would
// double its work and hide the fault). Reason names the fault: "no [DONE]
// before the connection closed", "stalled 10s after 3 chunks", "exceeded
// 1 MiB", "malformed data line 4: ...", "error event: ...", "connection
// cut after 12 chunks", "not finished within the 30s time-out after 5
// chunks".
type StreamError struct {
	Reason string
	Chunks int // events read before the fault
}

func (e *StreamError) Error() string        { return "llm: stream: " + e.Reason }
func (e *StreamError) Is(target error) bool { return target == ErrStream }

// APIs a Client speaks (Config.API).
const (
	APIChatCompletions = "chat_completions"
	APIResponses       = "responses"
)

// errStalled is the cause of an attempt cancelled by the idle time-out.
var errStalled = errors.New("stalled")

// assembler builds one answer from stream events, bounded in size.
type assembler struct {
	api       string
	maxAnswer int64
	size      int64
	chunks    int
	res       ChatResponse
	content   strings.Builder
	reasoning strings.Builder
	calls     []*callParts
	byKey     map[string]*callParts // a Responses call by item id or output index
	first     func()                // called at the first content or tool-call delta
	hide      func([]byte) []byte   // redacts an error event's text (nil: none)
	done      bool
}

// errorEvent is the fault of an error event whose text is msg (redacted
// before it is cut, so that no part of a secret is left).
func (a *assembler) errorEvent(msg []byte) *StreamError {
	if a.hide != nil {
		msg = a.hide(msg)
	}
	return streamFault(a.chunks, "error event: %s", truncate(string(msg), 512))
}

type callParts struct {
	id, name string
	args     strings.Builder
}

func newAssembler(api string, maxAnswer int64, first func()) *assembler {
	return &assembler{api: api, maxAnswer: maxAnswer, first: first, byKey: map[string]*callParts{}}
}

func streamFault(chunks int, format string, args ...any) *StreamError {
	return &StreamError{Reason: fmt.Sprintf(format, args...), Chunks: chunks}
}

// byteSize renders a limit as people write it.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func (a *assembler) tooLarge() *StreamError {
	return streamFault(a.chunks, "exceeded %s", byteSize(a.maxAnswer))
}

// grow counts n more bytes of the answer.
func (a *assembler) grow(n int) error {
	a.size += int64(n)
	if a.size > a.maxAnswer {
		return a.tooLarge()
	}
	return nil
}

func (a *assembler) token(s string) {
	if s != "" && a.first != nil {
		a.first()
		a.first = nil
	}
}

func (a *assembler) endName() string {
	if a.api == APIResponses {
		return "response.completed"
	}
	return "[DONE]"
}

// read reads events from r until the answer is complete. A read error is
// returned as it is, for the caller to classify (a stall, a time-out, a
// cut connection); onEvent is called after each event.
func (a *assembler) read(sr *sseReader, onEvent func()) (ChatResponse, error) {
	for {
		ev, err := sr.next()
		switch {
		case errors.Is(err, errLineTooLong):
			return ChatResponse{}, a.tooLarge()
		case errors.Is(err, io.EOF):
			return ChatResponse{}, streamFault(a.chunks, "no %s before the connection closed (after %d chunks)", a.endName(), a.chunks)
		case err != nil:
			return ChatResponse{}, err
		}
		a.chunks++
		if onEvent != nil {
			onEvent()
		}
		if a.api == APIResponses {
			err = a.responsesEvent(ev)
		} else {
			err = a.chatEvent(ev)
		}
		if err != nil {
			return ChatResponse{}, err
		}
		if a.done {
			return a.result(), nil
		}
	}
}

func (a *assembler) result() ChatResponse {
	res := a.res
	res.Message.Role = RoleAssistant
	res.Message.Content = a.content.String()
	res.Reasoning = a.reasoning.String()
	for i, c := range a.calls {
		tc := ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()}
		if tc.ID == "" {
			tc.ID = "call_" + strconv.Itoa(i)
		}
		res.Message.ToolCalls = append(res.Message.ToolCalls, tc)
	}
	if res.Usage.TotalTokens == 0 {
		res.Usage.TotalTokens = res.Usage.PromptTokens + res.Usage.CompletionTokens
	}
	return res
}

func malformed(ev sseEvent, chunks int, err error) *StreamError {
	msg := err.Error()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		msg = "not JSON (" + se.Error() + ")"
	case errors.As(err, &te):
		msg = fmt.Sprintf("%s is a JSON %s", te.Field, te.Value)
	}
	return streamFault(chunks, "malformed data line %d: %s", ev.line, truncate(msg, 200))
}

type chatChunk struct {
	Model   string          `json:"model"`
	Choices []chatChunkItem `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type chatChunkItem struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	FinishReason json.RawMessage `json:"finish_reason"`
}

type chatDelta struct {
	Content          json.RawMessage `json:"content"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ToolCalls        []struct {
		Index    int             `json:"index"`
		ID       json.RawMessage `json:"id"`
		Function struct {
			Name      json.RawMessage `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// maxCalls bounds the tool calls of one answer (a call index is the
// sender's: it must not size a slice).
const maxCalls = 128

func (a *assembler) chatEvent(ev sseEvent) error {
	data := bytes.TrimSpace(ev.data)
	if string(data) == "[DONE]" {
		a.done = true
		return nil
	}
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		if ev.name == "error" {
			return a.errorEvent(data)
		}
		return malformed(ev, a.chunks, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" || ev.name == "error" {
		return a.errorEvent(errorText(c.Error, data))
	}
	if c.Model != "" {
		a.res.Model = truncate(c.Model, 256)
	}
	if u := usageOfRaw(c.Usage, "prompt_tokens", "completion_tokens"); u != nil {
		a.res.Usage = *u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only the first choice is answered
		}
		if fr := rawText(ch.FinishReason); fr != "" {
			a.res.FinishReason = truncate(fr, 64)
		}
		text, ok := contentText(ch.Delta.Content)
		if !ok {
			return malformed(ev, a.chunks, errors.New("delta.content is neither a string, null nor an array of parts"))
		}
		if err := a.grow(len(text)); err != nil {
			return err
		}
		a.content.WriteString(text)
		a.token(text)
		r := rawText(ch.Delta.ReasoningContent)
		if r == "" {
			r = rawText(ch.Delta.Reasoning)
		}
		if err := a.grow(len(r)); err != nil {
			return err
		}
		a.reasoning.WriteString(r)
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxCalls {
				return malformed(ev, a.chunks, fmt.Errorf("tool call index %d out of range", tc.Index))
			}
			for len(a.calls) <= tc.Index {
				a.calls = append(a.calls, &callParts{})
			}
			call := a.calls[tc.Index]
			id, name, args := rawText(tc.ID), rawText(tc.Function.Name), rawText(tc.Function.Arguments)
			if err := a.grow(len(id) + len(name) + len(args)); err != nil {
				return err
			}
			if id != "" {
				call.id = id
			}
			if name != "" {
				call.name += name
			}
			call.args.WriteString(args)
			a.token(name + args)
		}
	}
	return nil
}

// usageOfRaw reads a usage object with the given names of its input and
// output counts; nil when there is none (or it is malformed: usage is
// informative).
func usageOfRaw(raw json.RawMessage, in, out string) *Usage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	num := func(k string) int {
		var f float64
		if json.Unmarshal(m[k], &f) != nil {
			return 0
		}
		return tokenCount(f)
	}
	return &Usage{PromptTokens: num(in), CompletionTokens: num(out), TotalTokens: num("total_tokens")}
}

type responsesEvent struct {
	Type        string          `json:"type"`
	Delta       json.RawMessage `json:"delta"`
	ItemID      string          `json:"item_id"`
	OutputIndex *int            `json:"output_index"`
	Arguments   json.RawMessage `json:"arguments"`
	Item        *responsesItem  `json:"item"`
	Response    *struct {
		Model             string          `json:"model"`
		Usage             json.RawMessage `json:"usage"`
		Error             json.RawMessage `json:"error"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	} `json:"response"`
	Message json.RawMessage `json:"message"`
	Code    json.RawMessage `json:"code"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (a *assembler) responsesCall(ev responsesEvent) *callParts {
	key := ev.ItemID
	if key == "" && ev.OutputIndex != nil {
		key = "#" + strconv.Itoa(*ev.OutputIndex)
	}
	if c, ok := a.byKey[key]; ok {
		return c
	}
	if len(a.calls) >= maxCalls {
		return nil
	}
	c := &callParts{}
	a.calls = append(a.calls, c)
	a.byKey[key] = c
	if ev.OutputIndex != nil && ev.ItemID != "" { // the other name it may be found by
		a.byKey["#"+strconv.Itoa(*ev.OutputIndex)] = c
	}
	return c
}

func (a *assembler) responsesEvent(ev sseEvent) error {
	data := bytes.TrimSpace(ev.data)
	if string(data) == "[DONE]" {
		return streamFault(a.chunks, "[DONE] before response.completed")
	}
	var e responsesEvent
	if err := json.Unmarshal(data, &e); err != nil {
		if ev.name == "error" {
			return a.errorEvent(data)
		}
		return malformed(ev, a.chunks, err)
	}
	typ := e.Type
	if typ == "" {
		typ = ev.name
	}
	switch typ {
	case "error":
		if msg := rawText(e.Message); msg != "" {
			return a.errorEvent([]byte(msg))
		}
		return a.errorEvent(data)
	case "response.failed":
		if e.Response != nil && len(e.Response.Error) > 0 {
			return a.errorEvent(errorText(e.Response.Error, data))
		}
		return a.errorEvent([]byte("response.failed"))
	case "response.output_text.delta", "response.reasoning_text.delta":
		text := rawText(e.Delta)
		if err := a.grow(len(text)); err != nil {
			return err
		}
		if typ == "response.reasoning_text.delta" {
			a.reasoning.WriteString(text)
			return nil
		}
		a.content.WriteString(text)
		a.token(text)
	case "response.output_item.added", "response.output_item.done":
		if e.Item == nil || e.Item.Type != "function_call" {
			return nil
		}
		if e.ItemID == "" {
			e.ItemID = e.Item.ID
		}
		c := a.responsesCall(e)
		if c == nil {
			return malformed(ev, a.chunks, fmt.Errorf("more than %d tool calls", maxCalls))
		}
		if err := a.grow(len(e.Item.CallID) + len(e.Item.Name)); err != nil {
			return err
		}
		if e.Item.CallID != "" {
			c.id = e.Item.CallID
		}
		if e.Item.Name != "" {
			c.name = e.Item.Name
		}
		if args := rawText(e.Item.Arguments); args != "" && typ == "response.output_item.done" {
			if err := a.grow(len(args) - c.args.Len()); err != nil {
				return err
			}
			c.args.Reset()
			c.args.WriteString(args)
		}
		a.token(c.name)
	case "response.function_call_arguments.delta":
		c := a.responsesCall(e)
		if c == nil {
			return malformed(ev, a.chunks, fmt.Errorf("more than %d tool calls", maxCalls))
		}
		args := rawText(e.Delta)
		if err := a.grow(len(args)); err != nil {
			return err
		}
		c.args.WriteString(args)
		a.token(args)
	case "response.function_call_arguments.done":
		c := a.responsesCall(e)
		if c == nil {
			return malformed(ev, a.chunks, fmt.Errorf("more than %d tool calls", maxCalls))
		}
		if args := rawText(e.Arguments); args != "" {
			if err := a.grow(len(args) - c.args.Len()); err != nil {
				return err
			}
			c.args.Reset()
			c.args.WriteString(args)
		}
	case "response.completed", "response.incomplete":
		a.done = true
		a.res.FinishReason = "stop"
		if len(a.calls) > 0 {
			a.res.FinishReason = "tool_calls"
		}
		if r := e.Response; r != nil {
			a.res.Model = truncate(r.Model, 256)
			if u := usageOfRaw(r.Usage, "input_tokens", "output_tokens"); u != nil {
				a.res.Usage = *u
			}
			if typ == "response.incomplete" {
				a.res.FinishReason = "length"
				if d := r.IncompleteDetails; d != nil && d.Reason == "content_filter" {
					a.res.FinishReason = "content_filter"
				}
			}
		}
	}
	return nil
}

// errorText is the message of an error object (its "message", or the
// object itself), or whole when there is none.
func errorText(errRaw json.RawMessage, whole []byte) []byte {
	raw := bytes.TrimSpace(errRaw)
	var obj struct {
		Message json.RawMessage `json:"message"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		if s := rawText(obj.Message); s != "" {
			return []byte(s)
		}
	}
	if s := rawText(raw); s != "" {
		return []byte(s)
	}
	return whole
}

// parseResponsesBody parses a Responses API answer sent as one JSON body.
func parseResponsesBody(data []byte) (ChatResponse, error) {
	var w struct {
		Model  string `json:"model"`
		Status string `json:"status"`
		Output []struct {
			Type      string          `json:"type"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Content   []struct {
				Type string          `json:"type"`
				Text json.RawMessage `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage json.RawMessage `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return ChatResponse{}, fmt.Errorf("%w: %v", ErrMalformedResponse, err)
	}
	if msg := errorSummary(w.Error); msg != "" {
		return ChatResponse{}, fmt.Errorf("%w: server error in a 2xx body: %s", ErrNoChoices, msg)
	}
	if w.Output == nil {
		return ChatResponse{}, fmt.Errorf("%w: no output", ErrMalformedResponse)
	}
	res := ChatResponse{Model: w.Model, FinishReason: "stop", Message: Message{Role: RoleAssistant}}
	var b strings.Builder
	for i, o := range w.Output {
		switch o.Type {
		case "message":
			for _, p := range o.Content {
				if p.Type == "output_text" || p.Type == "text" {
					b.WriteString(rawText(p.Text))
				}
			}
		case "function_call":
			id := o.CallID
			if id == "" {
				id = "call_" + strconv.Itoa(i)
			}
			res.Message.ToolCalls = append(res.Message.ToolCalls, ToolCall{ID: id, Name: o.Name, Arguments: rawText(o.Arguments)})
			res.FinishReason = "tool_calls"
		}
	}
	res.Message.Content = b.String()
	if w.Status == "incomplete" {
		res.FinishReason = "length"
	}
	if u := usageOfRaw(w.Usage, "input_tokens", "output_tokens"); u != nil {
		res.Usage = *u
		if res.Usage.TotalTokens == 0 {
			res.Usage.TotalTokens = res.Usage.PromptTokens + res.Usage.CompletionTokens
		}
	}
	return res, nil
}

// classifyRead names a read error of a streamed answer: the idle
// time-out, the attempt's time-out, or a cut connection. The caller's
// own cancellation is returned as it is.
func classifyRead(err error, ctxErr error, cause error, chunks int, idle, timeout time.Duration) error {
	switch {
	case ctxErr != nil:
		return err
	case errors.Is(cause, errStalled):
		return streamFault(chunks, "stalled %s after %d chunks", idle, chunks)
	case errors.Is(cause, context.DeadlineExceeded):
		return streamFault(chunks, "not finished within the %s time-out after %d chunks", timeout, chunks)
	}
	return streamFault(chunks, "connection cut after %d chunks", chunks)
}
