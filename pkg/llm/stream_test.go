package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
)

func streamingClient(t *testing.T, srv *llmtest.Server, mod func(*Config)) *Client {
	t.Helper()
	return newTestClient(t, srv, func(c *Config) {
		c.Stream = true
		c.IdleTimeout = 300 * time.Millisecond
		if mod != nil {
			mod(c)
		}
	})
}

// waitGoroutines polls until the goroutine count is back to at most n, or
// fails with the stacks.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond) // polling, not waiting for an outcome
	}
}

// A streamed chat completion is assembled: content deltas, tool-call
// deltas by index with their arguments concatenated, and the final usage;
// the request said stream: true and asked for usage.
func TestStreamedChatIsAssembled(t *testing.T) {
	srv := newServer(t, llmtest.Sequence(
		llmtest.OK("We open nine to five, Monday to Friday."),
		llmtest.ToolCall("book", `{"day":"monday","time":"09:00"}`),
	))
	srv.SetStream(&llmtest.Stream{})
	c := streamingClient(t, srv, nil)
	res, err := c.Chat(context.Background(), userReq("hours?"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Streamed || res.Message.Content != "We open nine to five, Monday to Friday." || res.FinishReason != "stop" ||
		res.Usage.CompletionTokens == 0 || res.Usage.TotalTokens != res.Usage.PromptTokens+res.Usage.CompletionTokens || res.Model != "test-model" {
		t.Fatalf("assembled %+v", res)
	}
	res, err = c.Chat(context.Background(), userReq("book monday"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Name != "book" || res.Message.ToolCalls[0].Arguments != `{"day":"monday","time":"09:00"}` ||
		!strings.HasPrefix(res.Message.ToolCalls[0].ID, "call_llmtest_") || res.FinishReason != "tool_calls" {
		t.Fatalf("tool call %+v", res)
	}
	r := srv.Requests()[0]
	if !r.Stream || !strings.Contains(string(r.Body), `"stream_options":{"include_usage":true}`) || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		t.Fatalf("request %s, Accept %q", r.Body, r.Header.Get("Accept"))
	}
}

// The Responses API: POST /responses, its events assembled.
func TestStreamedResponsesAreAssembled(t *testing.T) {
	srv := newServer(t, llmtest.Sequence(llmtest.OK("Nine to five."), llmtest.ToolCall("book", `{"day":"monday"}`)))
	srv.SetStream(&llmtest.Stream{Responses: true})
	c := streamingClient(t, srv, func(c *Config) { c.API = APIResponses })
	req := userReq("hours?")
	req.Messages = append([]Message{{Role: RoleSystem, Content: "Be brief."}}, req.Messages...)
	req.Tools = []Tool{{Name: "book"}}
	res, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "Nine to five." || res.Usage.TotalTokens == 0 || res.FinishReason != "stop" {
		t.Fatalf("assembled %+v", res)
	}
	res, err = c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Arguments != `{"day":"monday"}` || res.Message.ToolCalls[0].Name != "book" || res.FinishReason != "tool_calls" {
		t.Fatalf("tool call %+v", res)
	}
	r := srv.Requests()[0]
	if r.Path != llmtest.ResponsesPath || !r.Stream || len(r.Messages) != 2 || r.Messages[0].Role != "system" || len(r.Tools) != 1 {
		t.Fatalf("request %s %s", r.Path, r.Body)
	}
}

// An endpoint that answers one JSON body to a streaming request still
// works, on both APIs.
func TestStreamingClientReadsAJSONAnswer(t *testing.T) {
	srv := newServer(t, llmtest.Fixed(0, "plain JSON"))
	res, err := streamingClient(t, srv, nil).Chat(context.Background(), userReq("hi"))
	if err != nil || res.Message.Content != "plain JSON" || res.Streamed || res.FirstToken <= 0 {
		t.Fatalf("%+v %v", res, err)
	}
	rs := newServer(t, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Raw: []byte(`{"id":"r","object":"response","model":"m","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"plain responses"}]}],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}`)}
	})
	rs.SetStream(&llmtest.Stream{Responses: true}) // the path; a Raw reply is written as it is
	res, err = streamingClient(t, rs, func(c *Config) { c.API = APIResponses }).Chat(context.Background(), userReq("hi"))
	if err != nil || res.Message.Content != "plain responses" || res.Usage.TotalTokens != 5 {
		t.Fatalf("%+v %v", res, err)
	}
}

// Each bad stream fails at once, not retried, naming its fault; nothing
// is left running.
func TestBadStreamsFailNamingTheFault(t *testing.T) {
	const answer = "one two three four five six seven"
	for _, tc := range []struct {
		name      string
		stream    llmtest.Stream
		responses bool
		want      string
	}{
		{"no done", llmtest.Stream{NoEnd: true}, false, "no [DONE] before the connection closed (after 10 chunks)"},
		{"no completed", llmtest.Stream{NoEnd: true, Responses: true}, true, "no response.completed before the connection closed (after 8 chunks)"},
		{"stall", llmtest.Stream{StallAfter: 3}, false, "stalled 300ms after 3 chunks"},
		{"stall responses", llmtest.Stream{StallAfter: 3, Responses: true}, true, "stalled 300ms after 3 chunks"},
		{"too large", llmtest.Stream{Endless: true}, false, "exceeded 1 KiB"},
		{"too large responses", llmtest.Stream{Endless: true, Responses: true}, true, "exceeded 1 KiB"},
		{"malformed", llmtest.Stream{MalformedAt: 4}, false, "malformed data line 7: not JSON"},
		{"error event", llmtest.Stream{ErrorAfter: 2, ErrorMessage: "model melted"}, false, "error event: model melted"},
		{"error event responses", llmtest.Stream{ErrorAfter: 2, ErrorMessage: "model melted", Responses: true}, true, "error event: model melted"},
		{"cut", llmtest.Stream{CutAfter: 5}, false, "connection cut after 5 chunks"},
		{"cut responses", llmtest.Stream{CutAfter: 5, Responses: true}, true, "connection cut after 5 chunks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			srv := llmtest.NewServer(llmtest.Fixed(0, answer))
			st := tc.stream
			srv.SetStream(&st)
			c := streamingClient(t, srv, func(c *Config) {
				c.MaxStreamBytes = 1 << 10
				if tc.responses {
					c.API = APIResponses
				}
			})
			start := time.Now()
			_, err := c.Chat(context.Background(), userReq("count"))
			var se *StreamError
			if !errors.As(err, &se) || !errors.Is(err, ErrStream) || !strings.Contains(se.Reason, tc.want) {
				t.Fatalf("got %v, want a stream error naming %q", err, tc.want)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("took %s", took)
			}
			if n := srv.Len(); n != 1 {
				t.Fatalf("%d requests: a stream that began was retried", n)
			}
			srv.Close()
			c.hc.CloseIdleConnections()
			waitGoroutines(t, before)
		})
	}
}

// A failure before the first byte of the answer is retried; the answer
// then streams.
func TestStreamRetriesOnlyBeforeTheFirstByte(t *testing.T) {
	srv := newServer(t, llmtest.Sequence(llmtest.Error(503, "server_error", "busy"), llmtest.OK("at last")))
	srv.SetStream(&llmtest.Stream{})
	res, err := streamingClient(t, srv, nil).Chat(context.Background(), userReq("hi"))
	if err != nil || res.Message.Content != "at last" || res.Attempts != 2 {
		t.Fatalf("%+v %v", res, err)
	}
}

// Time to first token is the first content delta, not the headers nor the
// end; a slow first chunk is not a stall.
func TestStreamFirstToken(t *testing.T) {
	srv := newServer(t, llmtest.Fixed(0, "a b c d e"))
	// Chunks 100 ms apart: a loaded machine's delays stay within one.
	srv.SetStream(&llmtest.Stream{First: 400 * time.Millisecond, Gap: 100 * time.Millisecond})
	c := streamingClient(t, srv, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	start := time.Now()
	res, err := c.Chat(context.Background(), userReq("hi"))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// the role chunk comes at 400ms, "a" 100ms later (before "b" at
	// 600ms), then 4 words and the end
	if res.FirstToken < 490*time.Millisecond || res.FirstToken >= 600*time.Millisecond {
		t.Fatalf("first token %s, want from 500ms to before the next chunk's 600ms", res.FirstToken)
	}
	if took < 400*time.Millisecond+8*100*time.Millisecond {
		t.Fatalf("whole %s", took)
	}
}

// An error event's text is redacted like an error body.
func TestStreamErrorEventIsRedacted(t *testing.T) {
	srv := newServer(t, llmtest.Fixed(0, "x y z"))
	srv.SetStream(&llmtest.Stream{ErrorAfter: 1, ErrorMessage: "bad key " + testKey + " and secret-value-123"})
	c := streamingClient(t, srv, func(c *Config) {
		c.Redact = func(s string) string { return strings.ReplaceAll(s, "secret-value-123", "[gone]") }
	})
	_, err := c.Chat(context.Background(), userReq("hi"))
	if err == nil || strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "secret-value-123") || !strings.Contains(err.Error(), "[gone]") {
		t.Fatalf("%v", err)
	}
}

var _ = http.StatusOK

// A streaming request's answer is bounded alike whether the endpoint
// streamed it or sent one JSON body: the body was bound only by
// MaxResponseBytes (8 MiB), past the answer's own bound.
func TestAJSONAnswerToAStreamingRequestIsBoundedAsAStream(t *testing.T) {
	srv := newServer(t, llmtest.Fixed(0, strings.Repeat("word ", 1000))) // 5,000 bytes, one JSON body
	_, err := streamingClient(t, srv, func(c *Config) { c.MaxStreamBytes = 1 << 10 }).Chat(context.Background(), userReq("talk"))
	var se *StreamError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "exceeded 1 KiB") {
		t.Fatalf("got %v, want the answer's bound exceeded", err)
	}
}

// A 200 HTML page (a proxy's login page, a firewall's block page) is
// said to be one: it was taken for an event stream that closed before
// its first chunk, which sends a team to look at their stream.
func TestAnHTMLPageIsNotTakenForAStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>Sign in to the proxy</title>"))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, Model: "m", Stream: true, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), userReq("hi"))
	if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "HTML page") || !strings.Contains(err.Error(), "Sign in to the proxy") {
		t.Fatalf("got %v, want an HTML page named", err)
	}
}

// rawStream serves each request the given SSE lines, with a pause (the
// server's own pace) at each line "PAUSE"; it answers the server's URL.
func rawStream(t *testing.T, pause time.Duration, lines ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, l := range lines {
			if l == "PAUSE" {
				w.(http.Flusher).Flush()
				time.Sleep(pause)
				continue
			}
			_, _ = w.Write([]byte(l + "\n"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The idle time-out runs from the first content: a role-only chunk sent
// at once, then a model that thinks longer than the idle time-out before
// its first word, is no stall (the request's time-out bounds that wait);
// nor is a pause filled with keep-alive comments once it speaks.
func TestIdleTimeoutRunsFromTheFirstContentAndKeepAlivesCount(t *testing.T) {
	const role = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	word := func(w string) string { return `data: {"choices":[{"index":0,"delta":{"content":"` + w + `"}}]}` }
	for name, lines := range map[string][]string{
		"role chunk, then a long think": {role, "", "PAUSE", "PAUSE", "PAUSE", word("We open"), "", word(" at nine."), "", "data: [DONE]", ""},
		"keep-alives while it thinks":   {role, "", word("We open"), "", "PAUSE", ": ping", "PAUSE", ": ping", "PAUSE", ": ping", "PAUSE", word(" at nine."), "", "data: [DONE]", ""},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := New(Config{BaseURL: rawStream(t, 200*time.Millisecond, lines...), APIKey: testKey, Model: "m", Stream: true,
				Timeout: 5 * time.Second, IdleTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Chat(context.Background(), userReq("hi"))
			if err != nil || res.Message.Content != "We open at nine." {
				t.Fatalf("%+v %v", res, err)
			}
		})
	}
}

// An event stream begun (its headers sent) and then silent for the whole
// time-out is a stream that did not finish, as one sending keep-alives
// only: not retried, which would only wait as long again.
func TestASilentEventStreamIsNotRetried(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent until the client goes
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, Model: "m", Stream: true, Timeout: 300 * time.Millisecond,
		MaxRetries: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), userReq("hi"))
	var se *StreamError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "not finished within the 300ms time-out after 0 chunks") || requests.Load() != 1 {
		t.Fatalf("err %v, %d requests; want one request and a stream that did not finish", err, requests.Load())
	}
}
