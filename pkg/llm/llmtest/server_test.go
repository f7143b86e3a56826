package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func post(t *testing.T, ctx context.Context, url, body string, headers ...string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func newServer(t *testing.T, h Handler) *Server {
	t.Helper()
	s := NewServer(h)
	t.Cleanup(s.Close)
	return s
}

const chatBody = `{"model":"gpt-test","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hello world"}]}`

func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return m
}

func TestOKIsAValidCompletion(t *testing.T) {
	s := newServer(t, Fixed(0, "hi there"))
	if !strings.HasSuffix(s.URL, "/v1") {
		t.Fatalf("URL %q does not end in /v1", s.URL)
	}
	resp, body, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var c Completion
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	if c.ID == "" || c.Object != "chat.completion" || c.Created == 0 || c.Model != "gpt-test" || len(c.Choices) != 1 {
		t.Fatalf("completion %+v", c)
	}
	ch := c.Choices[0]
	if ch.Message.Role != "assistant" || ch.Message.Content != "hi there" || ch.FinishReason != "stop" {
		t.Errorf("choice %+v", ch)
	}
	if u := c.Usage; u == nil || u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", c.Usage)
	}
	m := decodeMap(t, body)
	if _, ok := m["choices"].([]any)[0].(map[string]any)["logprobs"]; !ok {
		t.Error("logprobs key missing")
	}
}

func TestToolCallReply(t *testing.T) {
	s := newServer(t, func(Request) Reply { return ToolCall("lookup", `{"q":"x"}`) })
	_, body, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	msg := decodeMap(t, body)["choices"].([]any)[0].(map[string]any)
	if msg["finish_reason"] != "tool_calls" {
		t.Errorf("finish_reason %v", msg["finish_reason"])
	}
	m := msg["message"].(map[string]any)
	if c, ok := m["content"]; !ok || c != nil {
		t.Errorf("content = %v (present %v), want null", c, ok)
	}
	tc := m["tool_calls"].([]any)[0].(map[string]any)
	fn := tc["function"].(map[string]any)
	if tc["id"] == "" || tc["type"] != "function" || fn["name"] != "lookup" || fn["arguments"] != `{"q":"x"}` {
		t.Errorf("tool call %v", tc)
	}
}

func TestErrorReply(t *testing.T) {
	s := newServer(t, Sequence(
		Error(429, "requests", "Rate limit reached").WithHeader("Retry-After", "3"),
		ErrorCode(401, "invalid_request_error", "invalid_api_key", "bad key"),
	))
	resp, body, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	want := map[string]any{"error": map[string]any{"message": "Rate limit reached", "type": "requests", "param": nil, "code": nil}}
	if got := decodeMap(t, body); !reflect.DeepEqual(got, want) {
		t.Errorf("body %v", got)
	}
	resp, body, _ = post(t, context.Background(), s.URL+"/chat/completions", chatBody)
	if resp.StatusCode != 401 || decodeMap(t, body)["error"].(map[string]any)["code"] != "invalid_api_key" {
		t.Errorf("second reply %d %s", resp.StatusCode, body)
	}
}

func TestRawAndBytesBodiesAreVerbatim(t *testing.T) {
	s := newServer(t, Sequence(
		Reply{Raw: []byte(`{"choices":[`), Body: "ignored"},
		Reply{Status: 201, Body: []byte("plain"), Headers: map[string]string{"Content-Type": "text/plain"}},
		Reply{Body: "a string"},
	))
	for _, want := range []string{`{"choices":[`, "plain", `"a string"`} {
		_, body, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != want {
			t.Errorf("body %q, want %q", body, want)
		}
	}
}

func TestRecordsRequestsAndAttempts(t *testing.T) {
	s := newServer(t, ByAttempt(Error(500, "server_error", "first"), OK("second")))
	other := `{"model":"gpt-test","messages":[{"role":"user","content":"other"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"response_format":{"type":"json_object"},"temperature":0.5,"max_tokens":10,"seed":1}`
	statuses := []int{}
	for _, b := range []string{chatBody, chatBody, other} {
		resp, _, err := post(t, context.Background(), s.URL+"/chat/completions", b, "Authorization", "Bearer sk-abc")
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, resp.StatusCode)
	}
	if !reflect.DeepEqual(statuses, []int{500, 200, 500}) {
		t.Errorf("statuses %v", statuses)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || s.Len() != 3 {
		t.Fatalf("%d requests recorded, Len %d", len(reqs), s.Len())
	}
	for i, want := range []int{1, 2, 1} {
		if reqs[i].Attempt != want || reqs[i].Seq != i+1 {
			t.Errorf("request %d: Attempt %d Seq %d", i, reqs[i].Attempt, reqs[i].Seq)
		}
	}
	r := reqs[0]
	if r.BearerToken() != "sk-abc" || r.Model != "gpt-test" || len(r.Messages) != 2 || r.Messages[1].Content != "hello world" ||
		string(r.Body) != chatBody || r.Method != "POST" || r.Path != ChatPath {
		t.Errorf("request %+v", r)
	}
	o := reqs[2]
	if len(o.Tools) != 1 || o.Tools[0].Function.Name != "f" || o.ResponseFormat.Type != "json_object" ||
		*o.Temperature != 0.5 || *o.MaxTokens != 10 || *o.Seed != 1 {
		t.Errorf("decoded %+v", o.ChatRequest)
	}

	s.Reset()
	if len(s.Requests()) != 0 || s.Len() != 0 {
		t.Error("Reset did not forget")
	}
	s.SetRecording(false)
	if _, _, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody); err != nil {
		t.Fatal(err)
	}
	if len(s.Requests()) != 0 || s.Len() != 1 {
		t.Errorf("recording off: %d recorded, Len %d", len(s.Requests()), s.Len())
	}
}

func TestProtocolErrorsSkipTheHandler(t *testing.T) {
	var calls atomic.Int32
	s := newServer(t, func(Request) Reply { calls.Add(1); return OK("x") })
	cases := []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/models", "{}", 404},
		{"POST", "/v1/chat/completions/", chatBody, 404},
		{"GET", "/v1/chat/completions", "", 405},
		{"POST", "/v1/chat/completions", "not json", 400},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":5}]}`, 400},
		{"POST", "/v1/chat/completions", `{"model":"m"} {}`, 400},
	}
	base := strings.TrimSuffix(s.URL, "/v1")
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s %q: status %d, want %d", tc.method, tc.path, tc.body, resp.StatusCode, tc.status)
		}
		if e, ok := decodeMap(t, body)["error"].(map[string]any); !ok || e["message"] == "" {
			t.Errorf("%s %s: body %s", tc.method, tc.path, body)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("handler called %d times", calls.Load())
	}
	if got := len(s.Requests()); got != len(cases) {
		t.Errorf("%d recorded, want %d", got, len(cases))
	}
	if s.Requests()[3].DecodeError == "" {
		t.Error("DecodeError not recorded")
	}
}

func TestDelayEndsWhenTheClientGivesUp(t *testing.T) {
	handlerDone := make(chan struct{})
	s := newServer(t, func(req Request) Reply {
		go func() { <-req.Context.Done(); close(handlerDone) }()
		return OK("late").WithDelay(time.Minute)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := post(t, ctx, s.URL+"/chat/completions", chatBody)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	select {
	case <-handlerDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not notice the client left")
	}
	if e := time.Since(start); e > 5*time.Second {
		t.Errorf("took %s", e)
	}
}

func TestCloseDoesNotWaitForDelays(t *testing.T) {
	arrived := make(chan struct{})
	s := NewServer(func(Request) Reply { close(arrived); return OK("late").WithDelay(time.Minute) })
	errc := make(chan error, 1)
	go func() {
		_, _, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody)
		errc <- err
	}()
	<-arrived
	start := time.Now()
	s.Close()
	if e := time.Since(start); e > 5*time.Second {
		t.Errorf("Close took %s", e)
	}
	if err := <-errc; err == nil {
		t.Error("the client got an answer from a closed server")
	}
	s.Close() // idempotent
}

func TestDropIsANetworkError(t *testing.T) {
	s := newServer(t, Sequence(Reply{Drop: true}, OK("fine")))
	if _, _, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody); err == nil {
		t.Error("want a network error")
	}
	if resp, _, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody); err != nil || resp.StatusCode != 200 {
		t.Errorf("after drop: %v", err)
	}
}

func TestConcurrentRecording(t *testing.T) {
	s := newServer(t, Fixed(0, "x"))
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"%d"}]}`, i)
			if _, _, err := post(t, context.Background(), s.URL+"/chat/completions", body); err != nil {
				t.Error(err)
			}
			_ = s.Requests()
		}()
	}
	wg.Wait()
	reqs := s.Requests()
	if len(reqs) != n {
		t.Fatalf("%d recorded", len(reqs))
	}
	seen := map[int]bool{}
	for _, r := range reqs {
		if r.Attempt != 1 || seen[r.Seq] {
			t.Errorf("request Seq %d Attempt %d", r.Seq, r.Attempt)
		}
		seen[r.Seq] = true
	}
}

func TestSharedCompletionIsNotMutated(t *testing.T) {
	shared := ToolCall("f", "{}")
	s := newServer(t, func(Request) Reply { return shared })
	ids := map[string]bool{}
	for range 3 {
		_, body, err := post(t, context.Background(), s.URL+"/chat/completions", chatBody)
		if err != nil {
			t.Fatal(err)
		}
		var c Completion
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		ids[c.Choices[0].Message.ToolCalls[0].ID] = true
	}
	if len(ids) != 3 {
		t.Errorf("tool call IDs not unique: %v", ids)
	}
	if id := shared.Body.(Completion).Choices[0].Message.ToolCalls[0].ID; id != "" {
		t.Errorf("shared reply mutated: %q", id)
	}
}

func TestMessageJSON(t *testing.T) {
	var m Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},{"type":"text","text":"b"}]}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Content != "ab" || m.ContentNull {
		t.Errorf("%+v", m)
	}
	if err := json.Unmarshal([]byte(`{"role":"assistant"}`), &m); err != nil || !m.ContentNull {
		t.Errorf("absent content: %+v %v", m, err)
	}
	b, _ := json.Marshal(Message{Role: "user"})
	if !bytes.Equal(b, []byte(`{"role":"user","content":""}`)) {
		t.Errorf("marshal %s", b)
	}
}

func TestAgentAndJudgeRoutesByResponseFormat(t *testing.T) {
	s := newServer(t, AgentAndJudge(Fixed(0, "agent says hi"),
		Sequence(Verdict("failure", "no"), Verdict("success", "yes"))))
	judge := `{"model":"m","messages":[{"role":"user","content":"judge"}],"response_format":{"type":"json_object"}}`
	var got []string
	for _, b := range []string{chatBody, judge, chatBody, judge, judge} {
		_, body, err := post(t, context.Background(), s.URL+"/chat/completions", b)
		if err != nil {
			t.Fatal(err)
		}
		var c Completion
		if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("%v: %s", err, body)
		}
		got = append(got, c.Choices[0].Message.Content)
	}
	want := []string{"agent says hi", `{"rationale":["no"],"result":"failure","summary":"no"}`, "agent says hi",
		`{"rationale":["yes"],"result":"success","summary":"yes"}`, `{"rationale":["yes"],"result":"success","summary":"yes"}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("answers\n%q\nwant\n%q", got, want)
	}
}
