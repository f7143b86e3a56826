// Package llmtest runs an in-process HTTP server that speaks the OpenAI
// chat-completions protocol, for unit tests, component tests and
// benchmarks of code that talks to an LLM.
//
//	srv := llmtest.NewServer(llmtest.Sequence(
//		llmtest.Error(429, "rate_limit_exceeded", "slow down").WithHeader("retry-after-ms", "20"),
//		llmtest.OK("hello"),
//	))
//	defer srv.Close()
//	// point the client at srv.URL (it ends in /v1)
//
// The server answers POST /v1/chat/completions by calling the Handler;
// any other path gets a 404 and any other method a 405 with an OpenAI error
// body, and a body that is not a JSON object a 400, without calling the
// Handler. Every request is recorded (see Requests). SetStream makes it
// answer in server-sent events instead, on the chat-completions or the
// Responses API, with faults to inject (see Stream).
package llmtest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// ChatPath is the path the server answers, relative to the server root.
const ChatPath = "/v1/chat/completions"

// maxRequestBody bounds a request body read by the server.
const maxRequestBody = 32 << 20

// Request is one request received by the server.
type Request struct {
	// ChatRequest is the decoded body (zero when it could not be decoded).
	ChatRequest
	// Seq numbers requests in arrival order across the server, from 1.
	Seq int
	// Attempt counts the requests received so far, this one included,
	// with a byte-identical body. A client retrying a request resends the
	// same body, so for one conversation turn it is 1 on the first try, 2
	// on the first retry, and so on. Two concurrent conversations that send
	// identical bodies share the counter.
	Attempt int
	Method  string
	Path    string
	Header  http.Header
	Body    []byte // raw body
	// DecodeError is set when the body was not a valid chat request; the
	// server then answered 400 without calling the Handler.
	DecodeError string
	Received    time.Time
	// Context is done when the client goes away or the server is closed.
	// A Handler that blocks should watch it.
	Context context.Context
}

// BearerToken returns the token of an "Authorization: Bearer" header, or "".
func (r Request) BearerToken() string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return h[7:]
	}
	return ""
}

// Handler decides the reply to a chat-completions request. It may be called
// concurrently.
type Handler func(req Request) Reply

// Reply is what the server answers.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Headers are set on the response (e.g. "Retry-After", "retry-after-ms").
	Headers map[string]string
	// Body is written as is when it is a []byte, and marshalled as JSON
	// otherwise (nil: empty body). A Completion or *Completion gets its
	// empty fields filled in (see Completion).
	Body any
	// Delay is waited before answering. The wait ends early, and nothing is
	// written, when the client gives up or the server is closed.
	Delay time.Duration
	// Raw, when non-nil, is written instead of Body (e.g. malformed JSON).
	Raw []byte
	// Drop aborts the connection after Delay without answering, which the
	// client sees as a network error.
	Drop bool
}

// WithHeader returns a copy of r with one more header.
func (r Reply) WithHeader(key, value string) Reply {
	h := make(map[string]string, len(r.Headers)+1)
	for k, v := range r.Headers {
		h[k] = v
	}
	h[key] = value
	r.Headers = h
	return r
}

// WithDelay returns a copy of r answered after d.
func (r Reply) WithDelay(d time.Duration) Reply {
	r.Delay = d
	return r
}

// WithUsage returns a copy of r, whose Body is a Completion, reporting
// these token counts (the server fills in an estimate otherwise).
func (r Reply) WithUsage(prompt, completion int) Reply {
	c := r.Body.(Completion)
	c.Usage = &Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	r.Body = c
	return r
}

// OK is a valid chat.completion whose assistant message is content, with
// finish_reason "stop" and usage.
func OK(content string) Reply {
	return Reply{Status: http.StatusOK, Body: Completion{
		Choices: []Choice{{
			Message:      Message{Role: "assistant", Content: content},
			FinishReason: "stop",
		}},
	}}
}

// ToolCall is a valid chat.completion whose assistant message (content
// null) calls one function, with finish_reason "tool_calls".
func ToolCall(name, argsJSON string) Reply {
	return Reply{Status: http.StatusOK, Body: Completion{
		Choices: []Choice{{
			Message: Message{Role: "assistant", ContentNull: true, ToolCalls: []MessageToolCall{{
				Type: "function", Function: FunctionCall{Name: name, Arguments: argsJSON},
			}}},
			FinishReason: "tool_calls",
		}},
	}}
}

// Error is an OpenAI error answer: {"error":{"message","type","param":null,"code":null}}.
func Error(status int, typ, msg string) Reply {
	return ErrorCode(status, typ, nil, msg)
}

// ErrorCode is Error with error.code set (a string, a number or nil).
func ErrorCode(status int, typ string, code any, msg string) Reply {
	return Reply{Status: status, Body: ErrorBody{Error: ErrorDetail{Message: msg, Type: typ, Code: code}}}
}

// Fixed answers every request with OK(content) after latency; for
// benchmarks.
func Fixed(latency time.Duration, content string) Handler {
	r := OK(content).WithDelay(latency)
	return func(Request) Reply { return r }
}

// Sequence answers the n-th request it sees with replies[n-1], and every
// request after the last with the last reply.
func Sequence(replies ...Reply) Handler {
	if len(replies) == 0 {
		panic("llmtest: Sequence needs at least one reply")
	}
	var n atomic.Int64
	return func(Request) Reply {
		i := int(n.Add(1) - 1)
		return replies[min(i, len(replies)-1)]
	}
}

// ByAttempt answers a request with replies[Attempt-1], or the last reply
// once Attempt exceeds len(replies). Unlike Sequence it stays correct when
// several different conversations run concurrently.
func ByAttempt(replies ...Reply) Handler {
	if len(replies) == 0 {
		panic("llmtest: ByAttempt needs at least one reply")
	}
	return func(req Request) Reply {
		return replies[min(max(req.Attempt, 1)-1, len(replies)-1)]
	}
}

// Verdict is a judge's answer: OK with the JSON verdict object
// {"result","rationale":[summary],"summary"} a judge is asked for.
func Verdict(result, summary string) Reply {
	b, _ := json.Marshal(map[string]any{"result": result, "rationale": []string{summary}, "summary": summary})
	return OK(string(b))
}

// IsJudge reports whether req asks for a JSON object (response_format
// json_object), as a judge request does and an agent turn does not.
func IsJudge(req Request) bool {
	return req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object"
}

// AgentAndJudge answers judge requests (IsJudge) with judge and every
// other request with agent, so each role can be scripted on its own, e.g.
// a judge that changes its mind: AgentAndJudge(Fixed(0, "…"),
// Sequence(Verdict("failure", …), Verdict("success", …), …)).
func AgentAndJudge(agent, judge Handler) Handler {
	return func(req Request) Reply {
		if IsJudge(req) {
			return judge(req)
		}
		return agent(req)
	}
}

// Server is a running test server.
type Server struct {
	// URL is the API base URL, ending in /v1.
	URL string

	ts      *httptest.Server
	handler Handler
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	ids     atomic.Int64

	mu       sync.Mutex
	seq      int
	reqs     []Request
	attempts map[[sha256.Size]byte]int
	noRecord bool
	stream   *Stream
	active   map[net.Conn]bool // connections with a request in flight
}

// NewServer starts a server answering chat requests with h (nil: OK("ok")).
func NewServer(h Handler) *Server {
	if h == nil {
		h = Fixed(0, "ok")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{handler: h, ctx: ctx, cancel: cancel, attempts: map[[sha256.Size]byte]int{}, active: map[net.Conn]bool{}}
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if st == http.StateActive {
			s.active[c] = true
		} else {
			delete(s.active, c)
		}
	}
	s.ts.Start()
	s.URL = s.ts.URL + "/v1"
	return s
}

// Client returns an *http.Client configured for the server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Close cancels pending Delays and shuts the server down.
func (s *Server) Close() {
	s.cancel()
	s.ts.CloseClientConnections()
	s.ts.Close()
}

// Requests returns a copy of every request recorded so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	copy(out, s.reqs)
	return out
}

// Busy returns the number of connections with a request in flight: 0
// once every answer, streamed or not, has ended or been abandoned.
func (s *Server) Busy() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.active)
}

// Len returns the number of requests received (recorded or not).
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Reset forgets recorded requests and attempt counts.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs, s.seq = nil, 0
	clear(s.attempts)
}

// SetRecording turns recording on (the default) or off. With recording off,
// Requests stays empty and Attempt is always 1, so memory stays flat in long
// benchmarks.
func (s *Server) SetRecording(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRecord = !on
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()

	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	req := Request{
		Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body,
		Received: time.Now(), Context: ctx,
	}
	plan := s.streamPlan()
	path := ChatPath
	if plan != nil && plan.Responses {
		path = ResponsesPath
	}
	isChat := r.URL.Path == path && r.Method == http.MethodPost
	if isChat && readErr == nil {
		var err error
		if path == ResponsesPath {
			err = responsesRequest(body, &req.ChatRequest)
		} else {
			err = decodeStrict(body, &req.ChatRequest)
		}
		if err != nil {
			req.DecodeError = err.Error()
		}
	}

	s.mu.Lock()
	s.seq++
	req.Seq = s.seq
	if s.noRecord {
		req.Attempt = 1
	} else {
		key := sha256.Sum256(body)
		s.attempts[key]++
		req.Attempt = s.attempts[key]
		s.reqs = append(s.reqs, req)
	}
	s.mu.Unlock()

	switch {
	case readErr != nil:
		writeReply(w, Error(http.StatusBadRequest, "invalid_request_error", "could not read body: "+readErr.Error()))
		return
	case r.URL.Path != path:
		writeReply(w, ErrorCode(http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path)))
		return
	case r.Method != http.MethodPost:
		writeReply(w, Error(http.StatusMethodNotAllowed, "invalid_request_error",
			"Method not allowed: "+r.Method))
		return
	case req.DecodeError != "":
		writeReply(w, Error(http.StatusBadRequest, "invalid_request_error",
			"We could not parse the JSON body of your request: "+req.DecodeError))
		return
	}

	reply := s.handler(req)
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			// The client gave up or the server is closing: abort the
			// connection rather than let net/http send an implicit 200.
			panic(http.ErrAbortHandler)
		case <-t.C:
		}
	}
	if reply.Drop {
		panic(http.ErrAbortHandler)
	}
	switch b := reply.Body.(type) {
	case Completion:
		reply.Body = s.fill(b, req)
	case *Completion:
		if b != nil {
			reply.Body = s.fill(*b, req)
		}
	}
	if c, ok := reply.Body.(Completion); ok && plan != nil && reply.Raw == nil && (reply.Status == 0 || reply.Status == http.StatusOK) {
		writeStream(ctx, w, plan, c)
		return
	}
	writeReply(w, reply)
}

// decodeStrict decodes a request body that must be a single JSON object.
func decodeStrict(body []byte, into *ChatRequest) error {
	trimmed := strings.TrimSpace(string(body))
	if !strings.HasPrefix(trimmed, "{") {
		return fmt.Errorf("body is not a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if err := dec.Decode(into); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

func writeReply(w http.ResponseWriter, r Reply) {
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	for k, v := range r.Headers {
		w.Header().Set(k, v)
	}
	var payload []byte
	switch {
	case r.Raw != nil:
		payload = r.Raw
	case r.Body == nil:
	default:
		if b, ok := r.Body.([]byte); ok {
			payload = b
			break
		}
		b, err := json.Marshal(r.Body)
		if err != nil {
			status = http.StatusInternalServerError
			b, _ = json.Marshal(ErrorBody{Error: ErrorDetail{
				Message: "llmtest: cannot marshal reply body: " + err.Error(), Type: "server_error",
			}})
		}
		payload = b
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(status)
	_, _ = w.Write(payload)
}

// fill completes a Completion without touching the caller's slices.
func (s *Server) fill(c Completion, req Request) Completion {
	n := s.ids.Add(1)
	if c.ID == "" {
		c.ID = "chatcmpl-llmtest-" + strconv.FormatInt(n, 10)
	}
	if c.Object == "" {
		c.Object = "chat.completion"
	}
	if c.Created == 0 {
		c.Created = req.Received.Unix()
	}
	if c.Model == "" {
		c.Model = req.Model
		if c.Model == "" {
			c.Model = "llmtest"
		}
	}
	choices := make([]Choice, len(c.Choices))
	completion := 0
	for i, ch := range c.Choices {
		ch.Index = i
		if len(ch.Message.ToolCalls) > 0 {
			calls := make([]MessageToolCall, len(ch.Message.ToolCalls))
			for j, tc := range ch.Message.ToolCalls {
				if tc.ID == "" {
					tc.ID = fmt.Sprintf("call_llmtest_%d_%d", n, j)
				}
				if tc.Type == "" {
					tc.Type = "function"
				}
				calls[j] = tc
				completion += approxTokens(tc.Function.Name) + approxTokens(tc.Function.Arguments)
			}
			ch.Message.ToolCalls = calls
		}
		completion += approxTokens(ch.Message.Content)
		choices[i] = ch
	}
	c.Choices = choices
	if c.Usage == nil {
		prompt := 0
		for _, m := range req.Messages {
			prompt += 4 + approxTokens(m.Content)
			for _, tc := range m.ToolCalls {
				prompt += approxTokens(tc.Function.Name) + approxTokens(tc.Function.Arguments)
			}
		}
		completion = max(completion, 1)
		c.Usage = &Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	}
	return c
}

func approxTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}
