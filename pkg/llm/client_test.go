package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
)

const testKey = "sk-test-SECRET-0123456789"

// newTestClient returns a client for srv with small, test-friendly timings.
func newTestClient(t *testing.T, srv *llmtest.Server, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		BaseURL:        srv.URL,
		APIKey:         testKey,
		Model:          "test-model",
		Timeout:        5 * time.Second,
		MaxRetries:     3,
		MaxBackoff:     20 * time.Millisecond,
		InitialBackoff: time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func newServer(t *testing.T, h llmtest.Handler) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func userReq(text string) ChatRequest {
	return ChatRequest{Messages: []Message{{Role: RoleUser, Content: text}}}
}

// recordSleeps replaces the back-off sleep with one that records the asked
// delays and returns at once.
func recordSleeps(c *Client) func() []time.Duration {
	var mu sync.Mutex
	var got []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
		return ctx.Err()
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), got...)
	}
}

func TestNewValidation(t *testing.T) {
	bad := []Config{
		{BaseURL: "http://localhost/v1"},                        // no model
		{BaseURL: "", Model: "m"},                               // no URL
		{BaseURL: "localhost:8080/v1", Model: "m"},              // no scheme
		{BaseURL: "ftp://example.com/v1", Model: "m"},           // wrong scheme
		{BaseURL: "/v1", Model: "m"},                            // relative
		{BaseURL: "http:///v1", Model: "m"},                     // no host
		{BaseURL: "http://[::1/v1", Model: "m"},                 // unparsable
		{BaseURL: "https://api.openai.com/v1", Model: "   "},    // blank model
		{BaseURL: "http://user:pass@%zz/v1", Model: "m"},        // bad escape
		{BaseURL: "https://api.example.com/v1\x7f", Model: "m"}, // control char
	}
	for _, cfg := range bad {
		if c, err := New(cfg); err == nil {
			t.Errorf("New(%q, model %q) = %v, want an error", cfg.BaseURL, cfg.Model, c)
		} else if strings.Contains(err.Error(), "pass") {
			t.Errorf("error echoes credentials: %v", err)
		}
	}

	c, err := New(Config{BaseURL: "https://api.openai.com/v1/", Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Model() != "gpt-4o-mini" {
		t.Errorf("Model() = %q", c.Model())
	}
	if c.timeout != DefaultTimeout || c.maxRetries != DefaultMaxRetries || c.maxBackoff != DefaultMaxBackoff ||
		c.initialBackoff != DefaultInitialBackoff || c.maxBody != DefaultMaxResponseBytes || c.hc == nil {
		t.Errorf("defaults not applied: %+v", *c)
	}
	if c, _ := New(Config{BaseURL: "http://x/v1", Model: "m", MaxRetries: -1}); c.maxRetries != 0 {
		t.Errorf("MaxRetries -1 gave %d retries, want 0", c.maxRetries)
	}

	endpoints := map[string]string{
		"https://api.openai.com/v1":                       "https://api.openai.com/v1/chat/completions",
		"https://api.openai.com/v1/":                      "https://api.openai.com/v1/chat/completions",
		"http://127.0.0.1:11434/v1//":                     "http://127.0.0.1:11434/v1/chat/completions",
		"http://127.0.0.1:8080":                           "http://127.0.0.1:8080/chat/completions",
		"http://h/v1/chat/completions":                    "http://h/v1/chat/completions",
		"https://h/openai/deployments/d?api-version=2024": "https://h/openai/deployments/d/chat/completions?api-version=2024",
		"HTTP://h/v1#frag":                                "http://h/v1/chat/completions",
	}
	for base, want := range endpoints {
		c, err := New(Config{BaseURL: base, Model: "m"})
		if err != nil {
			t.Errorf("New(%q): %v", base, err)
			continue
		}
		if c.endpoint != want {
			t.Errorf("endpoint for %q = %q, want %q", base, c.endpoint, want)
		}
	}
}

func TestChatRequestAndResponseOnTheWire(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Reply{Body: llmtest.Completion{
		Model: "test-model-2024-01-01",
		Choices: []llmtest.Choice{{
			Message: llmtest.Message{Role: "assistant", ToolCalls: []llmtest.MessageToolCall{
				{ID: "call_a", Type: "function", Function: llmtest.FunctionCall{Name: "lookup", Arguments: `{"q":"weather"}`}},
				{ID: "call_b", Type: "function", Function: llmtest.FunctionCall{Name: "hangup", Arguments: `{}`}},
			}},
			FinishReason: "tool_calls",
		}},
		Usage: &llmtest.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18},
	}}))
	c := newTestClient(t, srv, nil)

	temp, seed := 0.0, 42
	req := ChatRequest{
		Messages: []Message{
			{Role: RoleSystem, Content: "be brief"},
			{Role: RoleUser, Content: "what's the weather?", Name: "caller"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`}}},
			{Role: RoleTool, ToolCallID: "call_1", Content: `{"temp":21}`},
		},
		Tools: []Tool{
			{Name: "lookup", Description: "Look something up", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
			{Name: "hangup"},
		},
		Temperature: &temp,
		MaxTokens:   256,
		JSONObject:  true,
		Seed:        &seed,
	}
	res, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
		t.Errorf("request line %s %s", got.Method, got.Path)
	}
	if got.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got.Header.Get("Authorization"))
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	wantBody := `{
		"model": "test-model",
		"messages": [
			{"role": "system", "content": "be brief"},
			{"role": "user", "content": "what's the weather?", "name": "caller"},
			{"role": "assistant", "content": null, "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"x\"}"}}
			]},
			{"role": "tool", "content": "{\"temp\":21}", "tool_call_id": "call_1"}
		],
		"tools": [
			{"type": "function", "function": {"name": "lookup", "description": "Look something up",
				"parameters": {"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}},
			{"type": "function", "function": {"name": "hangup", "parameters": {"type":"object","properties":{}}}}
		],
		"temperature": 0,
		"max_tokens": 256,
		"response_format": {"type": "json_object"},
		"seed": 42,
		"stream": false
	}`
	assertJSONEqual(t, got.Body, []byte(wantBody))
	if got.Model != "test-model" || len(got.Messages) != 4 || !got.Messages[2].ContentNull ||
		got.ResponseFormat == nil || got.ResponseFormat.Type != "json_object" {
		t.Errorf("server decoded %+v", got.ChatRequest)
	}

	want := ChatResponse{
		Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
			{ID: "call_a", Name: "lookup", Arguments: `{"q":"weather"}`},
			{ID: "call_b", Name: "hangup", Arguments: `{}`},
		}},
		FinishReason: "tool_calls",
		Usage:        Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18},
		Model:        "test-model-2024-01-01",
		Attempts:     1,
	}
	if res.FirstToken <= 0 {
		t.Errorf("a JSON answer's first token is its whole time, not %s", res.FirstToken)
	}
	res.FirstToken = 0
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response\n got %+v\nwant %+v", res, want)
	}
}

func TestChatMinimalRequestAndContent(t *testing.T) {
	srv := newServer(t, llmtest.Fixed(0, "hello there"))
	c := newTestClient(t, srv, func(c *Config) { c.APIKey = "" })
	res, err := c.Chat(context.Background(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "hello there" || res.Message.Role != RoleAssistant || res.FinishReason != "stop" ||
		res.Model != "test-model" || res.Attempts != 1 {
		t.Errorf("response %+v", res)
	}
	if u := res.Usage; u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
	r := srv.Requests()[0]
	if h := r.Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization sent without a key: %q", h)
	}
	assertJSONEqual(t, r.Body, []byte(`{"model":"test-model","messages":[{"role":"user","content":"hi"}],"stream":false}`))
}

func TestChatToolCallReply(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.ToolCall("transfer", `{"to":"billing"}`)))
	c := newTestClient(t, srv, nil)
	res, err := c.Chat(context.Background(), userReq("transfer me"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != "tool_calls" || res.Message.Content != "" || len(res.Message.ToolCalls) != 1 {
		t.Fatalf("response %+v", res)
	}
	tc := res.Message.ToolCalls[0]
	if tc.ID == "" || tc.Name != "transfer" || tc.Arguments != `{"to":"billing"}` {
		t.Errorf("tool call %+v", tc)
	}
}

func TestRetryAfterMsIsHonoured(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(
		llmtest.Error(429, "requests", "Rate limit reached").WithHeader("retry-after-ms", "50"),
		llmtest.OK("done"),
	))
	// The jittered back-off alone would wait at most 1ms; MaxBackoff is far
	// above what was asked, so an upper bound a starved machine keeps tells
	// the asked wait from the longest.
	c := newTestClient(t, srv, func(c *Config) { c.MaxBackoff = 30 * time.Second })
	start := time.Now()
	res, err := c.Chat(context.Background(), userReq("hi"))
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || srv.Len() != 2 {
		t.Errorf("Attempts %d, server saw %d, want 2/2", res.Attempts, srv.Len())
	}
	if elapsed < 50*time.Millisecond || elapsed > 15*time.Second {
		t.Errorf("elapsed %s, want ≥ 50ms (asked) and well under MaxBackoff", elapsed)
	}
}

func TestRetryAfterIsCappedAtMaxBackoff(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(
		llmtest.Error(429, "requests", "slow down").WithHeader("Retry-After", "120"),
		llmtest.Error(503, "server_error", "busy").WithHeader("Retry-After", "1").WithHeader("retry-after-ms", "7"),
		llmtest.OK("done"),
	))
	c := newTestClient(t, srv, func(c *Config) { c.MaxBackoff = 30 * time.Millisecond })
	sleeps := recordSleeps(c)
	res, err := c.Chat(context.Background(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 3 {
		t.Errorf("Attempts = %d, want 3", res.Attempts)
	}
	// 120s capped to MaxBackoff; then retry-after-ms preferred over Retry-After.
	if got, want := sleeps(), []time.Duration{30 * time.Millisecond, 7 * time.Millisecond}; !reflect.DeepEqual(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := newServer(t, llmtest.ByAttempt(
		llmtest.Error(503, "server_error", "maintenance").WithHeader("Retry-After", now.Add(3*time.Second).Format(http.TimeFormat)),
		llmtest.OK("done"),
	))
	c := newTestClient(t, srv, func(c *Config) { c.MaxBackoff = time.Minute })
	c.now = func() time.Time { return now }
	sleeps := recordSleeps(c)
	if _, err := c.Chat(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if got := sleeps(); len(got) != 1 || got[0] != 3*time.Second {
		t.Errorf("waits %v, want [3s]", got)
	}
}

func TestExponentialBackoffWithoutHint(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Error(500, "server_error", "boom")))
	c := newTestClient(t, srv, func(c *Config) {
		c.MaxRetries = 5
		c.InitialBackoff = 10 * time.Millisecond
		c.MaxBackoff = 50 * time.Millisecond
	})
	var ceilings []time.Duration
	c.jitter = func(ceil time.Duration) time.Duration { ceilings = append(ceilings, ceil); return ceil / 2 }
	sleeps := recordSleeps(c)
	_, err := c.Chat(context.Background(), userReq("hi"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Attempts != 6 {
		t.Fatalf("err = %v, want *APIError after 6 attempts", err)
	}
	ms := time.Millisecond
	if want := []time.Duration{10 * ms, 20 * ms, 40 * ms, 50 * ms, 50 * ms}; !reflect.DeepEqual(ceilings, want) {
		t.Errorf("jitter ceilings %v, want %v", ceilings, want)
	}
	if want := []time.Duration{5 * ms, 10 * ms, 20 * ms, 25 * ms, 25 * ms}; !reflect.DeepEqual(sleeps(), want) {
		t.Errorf("waits %v, want %v", sleeps(), want)
	}
}

func TestBackoffBounds(t *testing.T) {
	for range 2000 {
		if d := fullJitter(10 * time.Millisecond); d < 0 || d > 10*time.Millisecond {
			t.Fatalf("fullJitter out of range: %s", d)
		}
	}
	if fullJitter(0) != 0 {
		t.Error("fullJitter(0) != 0")
	}
	c := &Client{initialBackoff: time.Second, maxBackoff: 1<<63 - 1, jitter: func(d time.Duration) time.Duration { return d }}
	for _, retry := range []int{1, 10, 62, 63, 64, 1000} {
		if d := c.backoff(retry, -1); d <= 0 {
			t.Errorf("backoff(%d) = %s overflowed", retry, d)
		}
	}
	if d := c.backoff(1, 0); d != 0 {
		t.Errorf("a zero hint gave %s", d)
	}
}

func TestRetriesOn5xxThenSuccess(t *testing.T) {
	for _, status := range []int{500, 502, 503, 504, 520, 529} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newServer(t, llmtest.ByAttempt(llmtest.Error(status, "server_error", "try later"), llmtest.OK("ok")))
			c := newTestClient(t, srv, nil)
			res, err := c.Chat(context.Background(), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Attempts != 2 || srv.Len() != 2 || res.Message.Content != "ok" {
				t.Errorf("Attempts %d, server saw %d, content %q", res.Attempts, srv.Len(), res.Message.Content)
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(
		llmtest.ErrorCode(503, "server_error", "overloaded", "The engine is currently overloaded").
			WithHeader("x-request-id", "req_123").WithHeader("retry-after-ms", "1"),
	))
	c := newTestClient(t, srv, nil)
	_, err := c.Chat(context.Background(), userReq("hi"))
	ae, ok := err.(*APIError)
	if !ok {
		t.Fatalf("err = %T %v, want a bare *APIError", err, err)
	}
	want := APIError{StatusCode: 503, Type: "server_error", Code: "overloaded", Message: "The engine is currently overloaded",
		RetryAfter: time.Millisecond, RequestID: "req_123", Attempts: 4}
	if *ae != want {
		t.Errorf("APIError\n got %+v\nwant %+v", *ae, want)
	}
	if !ae.Temporary() || srv.Len() != 4 {
		t.Errorf("Temporary %v, server saw %d requests, want true/4", ae.Temporary(), srv.Len())
	}
	if msg := ae.Error(); !strings.Contains(msg, "503") || !strings.Contains(msg, "overloaded") || !strings.Contains(msg, "4 attempts") {
		t.Errorf("Error() = %q", msg)
	}
}

// A caller that no longer wants the answer is asked before each retry,
// and the server is not called again once it says so.
func TestNoRetryOnceTheAnswerIsNotWanted(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Error(503, "server_error", "try later").WithHeader("retry-after-ms", "1")))
	c := newTestClient(t, srv, nil)
	asked := 0
	ctx := WithRetryCheck(context.Background(), func() bool { asked++; return asked < 2 })
	_, err := c.Chat(ctx, userReq("hi"))
	if !errors.Is(err, ErrNotWanted) || srv.Len() != 2 || asked != 2 {
		t.Fatalf("err %v, server saw %d requests, asked %d times; want 2 requests, the second retry not made", err, srv.Len(), asked)
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	cases := []struct {
		status   int
		code     any
		wantCode string
	}{
		{400, nil, ""},
		{401, "invalid_api_key", "invalid_api_key"},
		{403, "unsupported_country_region_territory", "unsupported_country_region_territory"},
		{404, "model_not_found", "model_not_found"},
		{408, nil, ""},
		{409, nil, ""},
		{422, 422, "422"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv := newServer(t, llmtest.ByAttempt(llmtest.ErrorCode(tc.status, "invalid_request_error", tc.code, "nope"), llmtest.OK("never")))
			c := newTestClient(t, srv, nil)
			_, err := c.Chat(context.Background(), userReq("hi"))
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *APIError", err)
			}
			if ae.StatusCode != tc.status || ae.Code != tc.wantCode || ae.Type != "invalid_request_error" ||
				ae.Message != "nope" || ae.Attempts != 1 || ae.Temporary() {
				t.Errorf("APIError %+v", *ae)
			}
			if srv.Len() != 1 {
				t.Errorf("server saw %d requests, want 1", srv.Len())
			}
		})
	}
}

func TestNetworkErrorIsRetried(t *testing.T) {
	srv := newServer(t, llmtest.Sequence(llmtest.Reply{Drop: true}, llmtest.OK("back")))
	c := newTestClient(t, srv, nil)
	res, err := c.Chat(context.Background(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Message.Content != "back" {
		t.Errorf("response %+v", res)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := llmtest.NewServer(nil)
	url := srv.URL
	srv.Close()
	c, err := New(Config{BaseURL: url, APIKey: testKey, Model: "m", MaxRetries: 1, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), userReq("hi"))
	if err == nil {
		t.Fatal("want an error")
	}
	var ae *APIError
	if errors.As(err, &ae) || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "after 2 attempt(s)") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
}

func TestPerAttemptTimeoutThenSuccess(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(
		llmtest.OK("too late").WithDelay(time.Minute),
		llmtest.OK("on time"),
	))
	c := newTestClient(t, srv, func(c *Config) { c.Timeout = 100 * time.Millisecond })
	start := time.Now()
	res, err := c.Chat(context.Background(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Message.Content != "on time" {
		t.Errorf("response %+v", res)
	}
	if e := time.Since(start); e < 100*time.Millisecond || e > 60*time.Second { // 120 s if not capped
		t.Errorf("elapsed %s", e)
	}
}

func TestAllAttemptsTimeOut(t *testing.T) {
	srv := newServer(t, llmtest.Fixed(time.Minute, "never"))
	c := newTestClient(t, srv, func(c *Config) {
		c.Timeout = 100 * time.Millisecond
		c.MaxRetries = 2
	})
	start := time.Now()
	_, err := c.Chat(context.Background(), userReq("hi"))
	if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout, not the caller's context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "after 3 attempt(s)") {
		t.Errorf("err = %v", err)
	}
	if srv.Len() != 3 {
		t.Errorf("server saw %d requests, want 3", srv.Len())
	}
	if e := time.Since(start); e < 300*time.Millisecond || e > 30*time.Second { // a minute if attempts did not time out
		t.Errorf("elapsed %s", e)
	}
}

func TestTimeoutWhileReadingBody(t *testing.T) {
	// A server that sends headers and then stalls: the timeout must cover
	// the body too.
	srv := newServer(t, nil)
	c := newTestClient(t, srv, func(c *Config) {
		c.Timeout = 100 * time.Millisecond
		c.MaxRetries = -1
		c.HTTPClient = &http.Client{Transport: stallingTransport{}}
	})
	_, err := c.Chat(context.Background(), userReq("hi"))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

// stallingTransport answers 200 with a body that blocks until the request
// context ends.
type stallingTransport struct{}

func (s stallingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: ctxReader{r.Context()}, Request: r}, nil
}

type ctxReader struct{ ctx context.Context }

func (c ctxReader) Read([]byte) (int, error) { <-c.ctx.Done(); return 0, c.ctx.Err() }
func (c ctxReader) Close() error             { return nil }

// chatCancelledOn runs a chat that its caller cancels once signal
// fires, and wants it to end at once with context.Canceled.
func chatCancelledOn[T any](t *testing.T, c *Client, signal <-chan T) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-signal
		cancel()
	}()
	start := time.Now()
	_, err := c.Chat(ctx, userReq("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if e := time.Since(start); e > 2*time.Second {
		t.Errorf("took %s to notice the cancellation", e)
	}
	return err
}

func TestContextCancelledDuringBackoff(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Error(503, "server_error", "busy").WithHeader("retry-after-ms", "60000")))
	c := newTestClient(t, srv, func(c *Config) { c.MaxBackoff = time.Hour })
	inSleep := make(chan time.Duration, 1)
	c.sleep = func(ctx context.Context, d time.Duration) error {
		inSleep <- d
		return sleepCtx(ctx, d)
	}
	err := chatCancelledOn(t, c, inSleep)
	if srv.Len() != 1 || !strings.Contains(err.Error(), "busy") {
		t.Errorf("server saw %d requests; err = %v", srv.Len(), err)
	}
}

func TestContextDeadlineDuringBackoffIsNotErrTimeout(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Error(429, "requests", "later").WithHeader("Retry-After", "60")))
	c := newTestClient(t, srv, func(c *Config) { c.MaxBackoff = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Chat(ctx, userReq("hi"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want the caller's deadline, not ErrTimeout", err)
	}
	if e := time.Since(start); e > 2*time.Second {
		t.Errorf("took %s", e)
	}
}

func TestContextCancelledDuringAttempt(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := newServer(t, func(req llmtest.Request) llmtest.Reply {
		arrived <- struct{}{}
		return llmtest.OK("late").WithDelay(time.Minute)
	})
	c := newTestClient(t, srv, nil)
	chatCancelledOn(t, c, arrived)
	if srv.Len() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.Len())
	}
}

func TestContextAlreadyCancelled(t *testing.T) {
	srv := newServer(t, nil)
	c := newTestClient(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Chat(ctx, userReq("hi")); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if srv.Len() != 0 {
		t.Errorf("server saw %d requests", srv.Len())
	}
}

func TestMalformedBodyIsRetried(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Reply{Raw: []byte(`{"choices":[{"message":`)}, llmtest.OK("fine")))
	c := newTestClient(t, srv, nil)
	res, err := c.Chat(context.Background(), userReq("hi"))
	if err != nil || res.Attempts != 2 {
		t.Fatalf("res %+v err %v", res, err)
	}

	srv2 := newServer(t, llmtest.ByAttempt(llmtest.Reply{Raw: []byte("<html>Bad gateway</html>")}))
	c2 := newTestClient(t, srv2, func(c *Config) { c.MaxRetries = 2 })
	_, err = c2.Chat(context.Background(), userReq("hi"))
	if !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("err = %v, want ErrMalformedResponse", err)
	}
	if srv2.Len() != 3 {
		t.Errorf("server saw %d requests, want 3", srv2.Len())
	}
}

// An answer no retry can change is final: one request, its error.
func TestFinalAnswersAreNotRetried(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer llmtest.Handler
		config func(*Config)
		want   error
	}{
		{"no choices", llmtest.ByAttempt(llmtest.Reply{Body: map[string]any{"id": "x", "object": "chat.completion", "model": "m", "choices": []any{}}}),
			nil, ErrNoChoices},
		{"too large", llmtest.Fixed(0, strings.Repeat("a", 4096)), func(c *Config) { c.MaxResponseBytes = 1024 }, ErrResponseTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, c.answer)
			_, err := newTestClient(t, srv, c.config).Chat(context.Background(), userReq("hi"))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if srv.Len() != 1 {
				t.Errorf("server saw %d requests, want 1", srv.Len())
			}
		})
	}
}

func TestHugeErrorBodyIsTruncated(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Reply{Status: 400, Raw: []byte(strings.Repeat("x", 1<<20))}))
	c := newTestClient(t, srv, nil)
	_, err := c.Chat(context.Background(), userReq("hi"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Message) > 1100 {
		t.Fatalf("err = %.200v", err)
	}
}

func TestInvalidRequestIsNotSent(t *testing.T) {
	srv := newServer(t, nil)
	c := newTestClient(t, srv, nil)
	bad := []ChatRequest{
		{},
		{Messages: []Message{{Content: "no role"}}},
		{Messages: []Message{{Role: RoleUser, Content: "x"}}, Tools: []Tool{{Description: "no name"}}},
		{Messages: []Message{{Role: RoleUser, Content: "x"}}, Tools: []Tool{{Name: "t", Parameters: json.RawMessage(`{"type":`)}}},
	}
	for i, r := range bad {
		if _, err := c.Chat(context.Background(), r); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("case %d: err = %v, want ErrInvalidRequest", i, err)
		}
	}
	if srv.Len() != 0 {
		t.Errorf("server saw %d requests", srv.Len())
	}
}

func TestAPIKeyIsNeverPrinted(t *testing.T) {
	cfg := Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: testKey, Model: "m"}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(&cfg),
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(c),
	} {
		if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") {
			t.Errorf("printed form leaks the key: %s", s)
		}
	}
}

func TestConcurrentChats(t *testing.T) {
	srv := newServer(t, llmtest.ByAttempt(llmtest.Error(500, "server_error", "flaky"), llmtest.OK("fine")))
	c := newTestClient(t, srv, nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Chat(context.Background(), userReq(fmt.Sprintf("conversation %d", i)))
			if err == nil && res.Attempts != 2 {
				err = fmt.Errorf("attempts %d", res.Attempts)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if srv.Len() != 2*n {
		t.Errorf("server saw %d requests, want %d", srv.Len(), 2*n)
	}
}

func BenchmarkChat(b *testing.B) {
	srv := llmtest.NewServer(llmtest.Fixed(0, "benchmark answer"))
	defer srv.Close()
	srv.SetRecording(false)
	c, err := New(Config{BaseURL: srv.URL, Model: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	req := userReq("hello")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Chat(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func assertJSONEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", "  ")
		wb, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("JSON differs\n got %s\nwant %s", gb, wb)
	}
}

// An endpoint that echoes the Authorization header in its error answer
// gets no API key into the error; Config.Redact hides other values before
// the message is cut to 1 KiB, so a value straddling the cut leaves no
// prefix behind.
func TestErrorAnswersEchoingCredentialsAreRedacted(t *testing.T) {
	const other = "zq9Xother-credential-value"
	srv := newServer(t, func(req llmtest.Request) llmtest.Reply {
		return llmtest.Error(401, "invalid_request_error", "you sent "+req.Header.Get("Authorization")+strings.Repeat(".", 994)+other)
	})
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, Model: "m", MaxRetries: -1,
		Redact: func(s string) string { return strings.ReplaceAll(s, other, "[hidden]") }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), userReq("hi"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.Message, "you sent Bearer [redacted]") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "zq9X") {
		t.Fatalf("error leaks a credential: %v", err)
	}
}

// An endpoint that answers at once and then trickles its body, a byte at
// a time, never finishing: each attempt ends at the per-attempt time-out
// and says so (ErrTimeout), not the caller's deadline, which is far off.
func TestTricklingBodyIsThePerAttemptTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for i := 0; ; i++ {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	c, err := New(Config{BaseURL: srv.URL, Model: "m", Timeout: 150 * time.Millisecond, MaxRetries: 1,
		InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = c.Chat(ctx, userReq("hi"))
	if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("err = %v (caller's ctx %v), want the per-attempt ErrTimeout", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "after 2 attempt(s)") || !strings.Contains(err.Error(), "150ms") {
		t.Errorf("err = %v", err)
	}
	if e := time.Since(start); e > 30*time.Second {
		t.Errorf("elapsed %s: the per-attempt time-out did not cut the trickle", e)
	}
}
