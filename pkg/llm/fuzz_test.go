package llm

import (
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
