package llm

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"
)

var responseSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`,
	`{"model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_x","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}]}`,
	`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":[1,2]}}}]}}]}`,
	`{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image_url"}]}}],"usage":{"prompt_tokens":1e400}}`,
	`{"choices":[{"message":{"content":"x","reasoning_content":"r"},"finish_reason":7}],"usage":{"prompt_tokens":-5,"total_tokens":"x"}}`,
	`{"choices":[]}`,
	`{"error":{"message":"boom"}}`,
	`{"choices":[{"delta":{}}]}`,
	"data: {}\n\n",
	`{"choices":[{"message":{"content":"\ud800"}}]}`,
	`[]`, `null`, ``, `{`, `{"choices":null}`,
}

// FuzzParseResponse feeds untrusted bodies to the 2xx parser: it must never
// panic, must fail only with the documented sentinels, and must return a
// usable message when it succeeds.
func FuzzParseResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := parseResponse(body)
		if err != nil {
			if !errors.Is(err, ErrMalformedResponse) && !errors.Is(err, ErrNoChoices) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if res.Message.Role == "" {
			t.Fatal("empty role")
		}
		for _, tc := range res.Message.ToolCalls {
			if tc.ID == "" {
				t.Fatal("tool call without ID")
			}
		}
		if u := res.Usage; u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
			t.Fatalf("negative usage %+v", u)
		}
		if res.Attempts != 0 {
			t.Fatal("parser set Attempts")
		}
	})
}

// FuzzParseAPIError feeds untrusted error bodies and Retry-After values.
func FuzzParseAPIError(f *testing.F) {
	f.Add(429, []byte(`{"error":{"message":"slow","type":"requests","code":"rate_limit_exceeded"}}`), "1", "")
	f.Add(400, []byte(`{"error":"bad"}`), "", "50")
	f.Add(400, []byte(`{"object":"error","message":"m","code":400}`), "Wed, 21 Oct 2015 07:28:00 GMT", "x")
	f.Add(500, []byte(`{"detail":{"a":1}}`), "1e308", "-1")
	f.Add(502, []byte("\xff\xfe<html>"), "NaN", "Inf")
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfterHdr, retryAfterMs string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfterHdr)
		h.Set("retry-after-ms", retryAfterMs)
		now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		e := parseAPIError(status, h, body, now)
		if e.StatusCode != status {
			t.Fatal("status changed")
		}
		if len(e.Message) > 1024+len("…") || len(e.Type) > 128+len("…") || len(e.Code) > 128+len("…") {
			t.Fatalf("unbounded fields: %d %d %d", len(e.Message), len(e.Type), len(e.Code))
		}
		if e.RetryAfter < 0 || e.RetryAfter > maxRetryAfter {
			t.Fatalf("RetryAfter out of range: %s", e.RetryAfter)
		}
		_ = e.Error()
	})
}

var streamSeeds = []string{
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
	"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\ndata: [DONE]",
	"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":99999999}]}}]}\n\n",
	"event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n",
	": keep-alive\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}]}\r\n\r\n",
	"data: {not json\n\n",
	"data: a\ndata: b\n\n",
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
	"data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c\",\"name\":\"f\"}}\n\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc\",\"delta\":\"{}\"}\n\ndata: {\"type\":\"response.function_call_arguments.done\",\"output_index\":1,\"arguments\":\"{\\\"b\\\":2}\"}\n\ndata: {\"type\":\"response.completed\"}\n\n",
	"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"x\"}}}\n\n",
	"data: {\"type\":\"error\",\"message\":\"m\"}\n\n",
	"", "\n\n\n", "data:", "data: [DONE]",
}

// FuzzStream feeds untrusted event streams to the SSE reader and the
// assembler of both APIs: they must never panic, fail only with a
// StreamError, and keep the answer within its bound.
func FuzzStream(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	const maxAnswer = 256
	f.Fuzz(func(t *testing.T, body []byte, responses bool) {
		api := APIChatCompletions
		if responses {
			api = APIResponses
		}
		firsts := 0
		a := newAssembler(api, maxAnswer, func() { firsts++ })
		res, err := a.read(newSSEReader(bytes.NewReader(body), 2*maxAnswer), nil)
		if firsts > 1 {
			t.Fatalf("first token reported %d times", firsts)
		}
		if err != nil {
			var se *StreamError
			if !errors.As(err, &se) || se.Reason == "" || len(se.Reason) > 1024 {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		size := len(res.Message.Content) + len(res.Reasoning)
		for _, tc := range res.Message.ToolCalls {
			if tc.ID == "" {
				t.Fatal("tool call without ID")
			}
			size += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
		if size > maxAnswer {
			t.Fatalf("answer of %d bytes over the bound %d", size, maxAnswer)
		}
		if res.Message.Role != RoleAssistant {
			t.Fatal("no role")
		}
		if u := res.Usage; u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
			t.Fatalf("negative usage %+v", u)
		}
	})
}
