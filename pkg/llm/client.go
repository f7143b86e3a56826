// Package llm is a small client for OpenAI-compatible chat-completions
// endpoints: OpenAI, vLLM, Ollama (its /v1 API), llama.cpp server and
// anything else that answers POST {BaseURL}/chat/completions with a
// "chat.completion" object.
//
// With Config.Stream it asks for the answer as server-sent events and
// reads them as they come (chat-completion chunks, or the Responses API's
// events with Config.API = APIResponses), assembling content, tool-call
// arguments and usage; it records when the first content came
// (ChatResponse.FirstToken). A streamed answer is bounded in time between
// chunks (Config.IdleTimeout) and in size (Config.MaxStreamBytes), and a
// stream that goes wrong once it began is a *StreamError naming the fault,
// never retried. The reader is this package's own (sse.go, stream.go):
// openai-go's ssestream ends a stream the same way on "[DONE]" and on a
// connection closed without it, buffers a line up to 32 MiB, and has no
// idle time-out, and those are the faults a run must name.
//
// # Retries
//
// Chat makes one attempt and up to Config.MaxRetries retries. It retries on
//
//   - HTTP 429 and every 5xx status,
//   - network errors (connection refused/reset, a connection dropped
//     before or while the body was read),
//   - a per-attempt timeout (Config.Timeout), and
//   - a 2xx answer whose body is not valid chat-completion JSON
//     (ErrMalformedResponse): a truncated or garbled body from an
//     overloaded server or a proxy is usually transient, and a server that
//     never speaks the protocol only costs MaxRetries extra requests.
//
// It never retries other 4xx answers (400, 401, 403, 404, 408, 409, 422, ...),
// a 2xx answer with zero choices (ErrNoChoices), a body larger than
// Config.MaxResponseBytes (ErrResponseTooLarge), or an invalid request
// (ErrInvalidRequest).
//
// Between attempts it waits with exponential back-off and full jitter: before
// retry n (n = 1, 2, ...) the wait is uniform in [0, min(MaxBackoff,
// InitialBackoff·2^(n-1))]. When the failed answer carries "retry-after-ms"
// (OpenAI, milliseconds, preferred because it is more precise) or
// "Retry-After" (seconds or an HTTP date), that delay is used instead,
// without jitter, capped at MaxBackoff. When the server asks for more than
// MaxBackoff the client still waits only MaxBackoff and then retries: the
// caller chose MaxBackoff as the longest stall it accepts, and the retry
// budget (MaxRetries) bounds the cost if the server is still not ready. The
// delay the server asked for is kept, uncapped, in APIError.RetryAfter.
//
// # Errors
//
// A final non-2xx answer is returned as a bare *APIError (not wrapped), with
// Attempts set. Other failures are wrapped errors matching the sentinels of
// this package with errors.Is: ErrTimeout when the last attempt timed
// out (not context.DeadlineExceeded, which is the caller's deadline),
// ErrMalformedResponse, ErrNoChoices, ErrResponseTooLarge,
// ErrInvalidRequest. When ctx is cancelled or its deadline passes, Chat
// returns at once with an error wrapping ctx.Err().
//
// The API key is only ever written to the Authorization header; it is never
// part of an error or of the String/GoString forms of Config and Client.
package llm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by New to zero fields of Config.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxRetries       = 4
	DefaultMaxBackoff       = 30 * time.Second
	DefaultInitialBackoff   = 500 * time.Millisecond
	DefaultMaxResponseBytes = 8 << 20 // 8 MiB
	DefaultIdleTimeout      = 10 * time.Second
	DefaultMaxStreamBytes   = 1 << 20 // 1 MiB

	// maxErrorBodyBytes bounds how much of a non-2xx body is read and parsed.
	maxErrorBodyBytes = 64 << 10
)

// Config configures a Client. Only BaseURL and Model are required.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1" or
	// "http://127.0.0.1:11434/v1". A trailing slash is ignored, a query
	// string is kept, and "/chat/completions" is appended unless the path
	// already ends with it.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>" when non-empty.
	APIKey string
	// Model is sent as "model" with every request.
	Model string
	// Timeout bounds one attempt, from sending the request to having read
	// the whole response body. Zero or negative: DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt.
	// Zero: DefaultMaxRetries. Negative: no retries.
	MaxRetries int
	// MaxBackoff caps one wait between attempts, including a wait asked for
	// by the server. Zero or negative: DefaultMaxBackoff.
	MaxBackoff time.Duration
	// InitialBackoff is the ceiling of the jittered wait before the first
	// retry; it doubles for each further retry up to MaxBackoff.
	// Zero or negative: DefaultInitialBackoff.
	InitialBackoff time.Duration
	// MaxResponseBytes bounds the size of a successful response body.
	// Zero or negative: DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Headers are sent with every request (an endpoint's own headers);
	// they never override Content-Type, Accept or Authorization.
	Headers http.Header
	// HTTPClient is used for requests when non-nil. By default the client
	// uses its own transport (a clone of http.DefaultTransport keeping more
	// idle connections per host). Its Timeout, if any, applies in addition
	// to Config.Timeout.
	HTTPClient *http.Client
	// Stream asks for the answer as server-sent events ("stream": true)
	// and reads it as it comes, content and tool-call deltas assembled; an
	// endpoint that answers one JSON body anyway is read as before. Once a
	// 2xx answer has begun, nothing is retried: a fault of the stream is a
	// *StreamError naming it.
	Stream bool
	// API is APIChatCompletions (the default: POST .../chat/completions) or
	// APIResponses (POST .../responses, the Responses API).
	API string
	// IdleTimeout bounds the wait between two chunks of a streamed answer
	// (a keep-alive comment counts), once its first content or tool-call
	// delta came (the wait for that is bounded by Timeout alone: a model may
	// think long before it speaks, after a role-only chunk too). Zero or
	// negative: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxStreamBytes bounds a streamed answer as assembled: its content,
	// reasoning, tool names and arguments. Zero or negative:
	// DefaultMaxStreamBytes.
	MaxStreamBytes int64
	// Redact, when set, is applied to an error answer's body before
	// anything of it becomes an APIError (whose message is cut to 1 KiB:
	// redacting only after that could leave part of a secret cut in two).
	// The API key itself is always hidden from it.
	Redact func(string) string
}

// String describes the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("llm.Config{BaseURL:%q, APIKey:%s, Model:%q, Timeout:%s, MaxRetries:%d, MaxBackoff:%s}",
		c.BaseURL, redact(c.APIKey), c.Model, c.Timeout, c.MaxRetries, c.MaxBackoff)
}

// GoString is String, so that %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }

func redact(key string) string {
	if key == "" {
		return `""`
	}
	return "[redacted]"
}

// Client sends chat-completion requests. It is safe for concurrent use.
type Client struct {
	endpoint       string
	apiKey         string
	headers        http.Header
	model          string
	timeout        time.Duration
	maxRetries     int
	maxBackoff     time.Duration
	initialBackoff time.Duration
	maxBody        int64
	hc             *http.Client
	redact         func(string) string
	stream         bool
	api            string
	idle           time.Duration
	maxAnswer      int64

	// Hooks, replaced by tests only.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(ceil time.Duration) time.Duration // uniform in [0, ceil]
	now    func() time.Time
}

// New validates c and returns a Client.
func New(c Config) (*Client, error) {
	if strings.TrimSpace(c.Model) == "" {
		return nil, errors.New("llm: Config.Model is required")
	}
	api := c.API
	switch api {
	case "":
		api = APIChatCompletions
	case APIChatCompletions, APIResponses:
	default:
		return nil, fmt.Errorf("llm: Config.API %q: want %q or %q", c.API, APIChatCompletions, APIResponses)
	}
	suffix := "/chat/completions"
	if api == APIResponses {
		suffix = "/responses"
	}
	endpoint, err := apiEndpoint(c.BaseURL, suffix)
	if err != nil {
		return nil, err
	}
	cl := &Client{
		endpoint:       endpoint,
		apiKey:         c.APIKey,
		headers:        c.Headers.Clone(),
		model:          c.Model,
		timeout:        c.Timeout,
		maxRetries:     c.MaxRetries,
		maxBackoff:     c.MaxBackoff,
		initialBackoff: c.InitialBackoff,
		maxBody:        c.MaxResponseBytes,
		hc:             c.HTTPClient,
		redact:         c.Redact,
		stream:         c.Stream,
		api:            api,
		idle:           c.IdleTimeout,
		maxAnswer:      c.MaxStreamBytes,
		sleep:          sleepCtx,
		jitter:         fullJitter,
		now:            time.Now,
	}
	if cl.timeout <= 0 {
		cl.timeout = DefaultTimeout
	}
	switch {
	case cl.maxRetries == 0:
		cl.maxRetries = DefaultMaxRetries
	case cl.maxRetries < 0:
		cl.maxRetries = 0
	}
	if cl.maxBackoff <= 0 {
		cl.maxBackoff = DefaultMaxBackoff
	}
	if cl.initialBackoff <= 0 {
		cl.initialBackoff = DefaultInitialBackoff
	}
	cl.initialBackoff = min(cl.initialBackoff, cl.maxBackoff)
	if cl.maxBody <= 0 {
		cl.maxBody = DefaultMaxResponseBytes
	}
	if cl.idle <= 0 {
		cl.idle = DefaultIdleTimeout
	}
	if cl.maxAnswer <= 0 {
		cl.maxAnswer = DefaultMaxStreamBytes
	}
	if cl.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		cl.hc = &http.Client{Transport: t}
	}
	return cl, nil
}

func apiEndpoint(base, suffix string) (string, error) {
	base = strings.TrimSpace(base)
	if base == "" {
		return "", errors.New("llm: Config.BaseURL is required")
	}
	u, err := url.Parse(base)
	if err != nil {
		// Do not echo the URL: it may carry credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("llm: invalid Config.BaseURL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("llm: invalid Config.BaseURL: scheme must be http or https, not %q", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("llm: invalid Config.BaseURL: no host")
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, suffix) {
		p += suffix
	}
	u.Path, u.RawPath, u.Fragment, u.RawFragment = p, "", "", ""
	return u.String(), nil
}

// Model returns the configured model name.
func (c *Client) Model() string { return c.model }

// String describes the client without the API key.
func (c *Client) String() string {
	return fmt.Sprintf("llm.Client{endpoint:%q, model:%q, apiKey:%s}", c.endpoint, c.model, redact(c.apiKey))
}

// GoString is String, so that %#v does not print the API key either.
func (c *Client) GoString() string { return c.String() }

// Identity is what Chat would send for req: the endpoint and the exact
// request body (the model included, the API key not). Two requests with the
// same identity are the same request; a response cache keys on it.
func (c *Client) Identity(req ChatRequest) ([]byte, error) {
	body, err := c.encode(req)
	if err != nil {
		return nil, err
	}
	return append([]byte(c.endpoint+"\n"), body...), nil
}

// Chat sends req and returns the first choice of the completion, retrying as
// described in the package documentation.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	body, err := c.encode(req)
	if err != nil {
		return ChatResponse{}, err
	}
	start := time.Now() // a measurement, not the clock of Retry-After dates
	var lastErr error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return ChatResponse{}, cancelled(attempt-1, lastErr, err)
		}
		res, retryable, hint, err := c.attempt(ctx, body, start)
		if err == nil {
			res.Attempts = attempt
			return res, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return ChatResponse{}, cancelled(attempt, err, cerr)
		}
		lastErr = err
		if !retryable || attempt > c.maxRetries {
			return ChatResponse{}, final(attempt, err)
		}
		waitFrom := time.Now()
		err = c.sleep(ctx, c.backoff(attempt, hint))
		if waited, ok := ctx.Value(retryWaitKey{}).(func(time.Duration)); ok {
			waited(time.Since(waitFrom))
		}
		if err != nil {
			return ChatResponse{}, cancelled(attempt, lastErr, err)
		}
		if wanted, ok := ctx.Value(retryCheckKey{}).(func() bool); ok && !wanted() {
			return ChatResponse{}, fmt.Errorf("llm: not retried after %d attempt(s), the answer no longer wanted (last error: %v): %w", attempt, lastErr, ErrNotWanted)
		}
	}
}

type retryWaitKey struct{}

// WithRetryWait is ctx whose Chat tells waited how long it waited before
// each retry (the back-off, or what the server asked for): time a caller
// measuring a server may count as the server's, since only its failure
// made it.
func WithRetryWait(ctx context.Context, waited func(time.Duration)) context.Context {
	return context.WithValue(ctx, retryWaitKey{}, waited)
}

type retryCheckKey struct{}

// ErrNotWanted ends a Chat whose caller, asked before a retry (see
// WithRetryCheck), no longer wanted the answer.
var ErrNotWanted = errors.New("llm: the answer is no longer wanted")

// WithRetryCheck is ctx whose Chat asks wanted before each retry: false
// ends the call there, with ErrNotWanted, rather than calling the server
// again for an answer nobody will read (a cancelled test run's). An
// attempt under way is not interrupted.
func WithRetryCheck(ctx context.Context, wanted func() bool) context.Context {
	return context.WithValue(ctx, retryCheckKey{}, wanted)
}

func cancelled(attempts int, last, ctxErr error) error {
	if last == nil {
		return fmt.Errorf("llm: chat cancelled after %d attempt(s): %w", attempts, ctxErr)
	}
	return fmt.Errorf("llm: chat cancelled after %d attempt(s) (last error: %v): %w", attempts, last, ctxErr)
}

func final(attempts int, err error) error {
	var ae *APIError
	if errors.As(err, &ae) {
		ae.Attempts = attempts
		return ae
	}
	var se *StreamError
	if errors.As(err, &se) {
		return se
	}
	return fmt.Errorf("llm: chat failed after %d attempt(s): %w", attempts, err)
}

// hint is the delay asked for by the server, or negative when it asked for
// none.
func (c *Client) backoff(retry int, hint time.Duration) time.Duration {
	if hint >= 0 {
		return min(hint, c.maxBackoff)
	}
	ceil := c.initialBackoff
	for i := 1; i < retry && ceil < c.maxBackoff; i++ {
		if ceil > c.maxBackoff/2 {
			ceil = c.maxBackoff
			break
		}
		ceil *= 2
	}
	return c.jitter(min(ceil, c.maxBackoff))
}

func fullJitter(ceil time.Duration) time.Duration {
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// attempt makes one request. It reports whether a failure may be retried
// and the delay the server asked for (negative: none).
func (c *Client) attempt(ctx context.Context, body []byte, start time.Time) (res ChatResponse, retryable bool, hint time.Duration, err error) {
	hint = -1
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	sctx, stop := context.WithCancelCause(actx) // stop(errStalled): the idle time-out
	defer stop(nil)

	hreq, err := http.NewRequestWithContext(sctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return res, false, hint, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	for k, v := range c.headers {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.stream {
		hreq.Header.Set("Accept", "text/event-stream, application/json")
	}
	hreq.Header.Set("User-Agent", "voiceai-testing-llm/1")
	if c.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
	}

	resp, err := c.hc.Do(hreq)
	if err != nil {
		return res, true, hint, c.transportError(ctx, actx, err)
	}
	defer resp.Body.Close()

	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok && c.stream {
		return c.readStreamed(ctx, actx, sctx, stop, resp, start)
	}
	limit := c.maxBody
	if !ok {
		limit = maxErrorBodyBytes
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return res, true, hint, c.transportError(ctx, actx, fmt.Errorf("reading response body: %w", err))
	}
	if int64(len(data)) > limit {
		if ok {
			return res, false, hint, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, c.maxBody)
		}
		data = data[:limit] // an error body: parse what we have
	}

	if !ok {
		ae := parseAPIError(resp.StatusCode, resp.Header, c.hide(data), c.now())
		if ae.Temporary() {
			if d, found := retryAfter(resp.Header, c.now()); found {
				hint = d
			}
			return res, true, hint, ae
		}
		return res, false, hint, ae
	}

	res, err = c.parse(data)
	if err != nil {
		return res, errors.Is(err, ErrMalformedResponse), hint, err
	}
	res.FirstToken = time.Since(start)
	return res, false, hint, nil
}

func (c *Client) encode(req ChatRequest) ([]byte, error) {
	if c.api == APIResponses {
		return encodeResponsesRequest(c.model, req, c.stream)
	}
	return encodeRequest(c.model, req, c.stream)
}

func (c *Client) parse(data []byte) (ChatResponse, error) {
	if c.api == APIResponses {
		return parseResponsesBody(data)
	}
	return parseResponse(data)
}

// readStreamed reads a 2xx answer to a streaming request: server-sent
// events, or (an endpoint that does not stream) one JSON body. Only a
// failure before its first byte is retried, but for an event stream's
// time-out.
func (c *Client) readStreamed(ctx, actx, sctx context.Context, stop context.CancelCauseFunc, resp *http.Response, start time.Time) (ChatResponse, bool, time.Duration, error) {
	const noHint = -1
	br := bufio.NewReaderSize(resp.Body, 4096)
	contentType := strings.ToLower(resp.Header.Get("Content-Type"))
	first, err := firstByte(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return ChatResponse{}, false, noHint, fmt.Errorf("%w: an empty body", ErrMalformedResponse)
		}
		if strings.Contains(contentType, "text/event-stream") && ctx.Err() == nil && errors.Is(context.Cause(sctx), context.DeadlineExceeded) {
			// The server began an event stream and sent nothing in the
			// whole time-out: a stream that did not finish, as one sending
			// only keep-alives; asking again would only wait as long again.
			return ChatResponse{}, false, noHint, classifyRead(err, nil, context.Cause(sctx), 0, c.idle, c.timeout)
		}
		return ChatResponse{}, true, noHint, c.transportError(ctx, actx, fmt.Errorf("reading response body: %w", err))
	}
	if strings.Contains(contentType, "text/html") {
		// A proxy's or firewall's page answered for the endpoint: said so,
		// not taken for an event stream that ended before its first event.
		start, _ := br.Peek(min(br.Buffered(), 200))
		return ChatResponse{}, false, noHint, fmt.Errorf("%w: an HTML page (Content-Type %s), not an answer: %q", ErrMalformedResponse,
			resp.Header.Get("Content-Type"), strings.ToValidUTF8(string(c.hide(start)), "\uFFFD"))
	}
	sse := strings.Contains(contentType, "text/event-stream") || (first != '{' && first != '[')
	if !sse {
		data, err := io.ReadAll(io.LimitReader(br, c.maxBody+1))
		if err != nil {
			return ChatResponse{}, false, noHint, c.transportError(ctx, actx, fmt.Errorf("reading response body: %w", err))
		}
		if int64(len(data)) > c.maxBody {
			return ChatResponse{}, false, noHint, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, c.maxBody)
		}
		res, err := c.parse(data)
		if err != nil {
			return res, false, noHint, err
		}
		// The answer's bound holds whether the endpoint streamed it or not.
		if answered(res.Message) > c.maxAnswer {
			return ChatResponse{}, false, noHint, streamFault(0, "exceeded %s", byteSize(c.maxAnswer))
		}
		res.FirstToken = time.Since(start)
		return res, false, noHint, nil
	}
	// The idle time-out runs from the first content or tool-call delta: the
	// wait for it is the time-out's (a role-only chunk, sent at once by many
	// servers, is no start of the answer). From then on every event and
	// every comment (a keep-alive: the server is there) resets it.
	idle := time.AfterFunc(c.idle, func() { stop(errStalled) })
	idle.Stop()
	defer idle.Stop()
	var firstToken time.Duration
	begun := false
	alive := func() {
		if begun {
			idle.Reset(c.idle)
		}
	}
	a := newAssembler(c.api, c.maxAnswer, func() {
		firstToken, begun = time.Since(start), true
		idle.Reset(c.idle)
	})
	a.hide = c.hide
	// A line may carry the whole answer, JSON-escaped, with room to spare.
	sr := newSSEReader(br, int(min(2*c.maxAnswer+64<<10, c.maxBody)))
	sr.comment = alive
	res, err := a.read(sr, alive)
	if err != nil {
		var se *StreamError
		if !errors.As(err, &se) {
			err = classifyRead(err, ctx.Err(), context.Cause(sctx), a.chunks, c.idle, c.timeout)
		}
		return ChatResponse{}, false, noHint, err
	}
	if firstToken == 0 {
		firstToken = time.Since(start) // an answer with no content: its end is its first token
	}
	res.FirstToken, res.Streamed = firstToken, true
	return res, false, noHint, nil
}

// answered is the size of an answer as a stream's is bounded: its
// content, tool names and arguments.
func answered(m Message) int64 {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return int64(n)
}

// firstByte answers the first byte of the body that is not white space,
// leaving it unread.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return b, br.UnreadByte()
		}
	}
}

// hide is an error answer's body through Config.Redact, then without the
// API key (an endpoint may echo the Authorization header it got).
func (c *Client) hide(body []byte) []byte {
	if c.redact != nil {
		body = []byte(c.redact(string(body)))
	}
	if len(c.apiKey) >= 8 && bytes.Contains(body, []byte(c.apiKey)) {
		body = bytes.ReplaceAll(body, []byte(c.apiKey), []byte("[redacted]"))
	}
	return body
}

// transportError classifies an error of Do or of reading the body: the
// caller's cancellation, a per-attempt timeout, or a network error.
func (c *Client) transportError(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return err // Chat reports ctx.Err()
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("after %s: %w", c.timeout, ErrTimeout)
	}
	return fmt.Errorf("llm: network error: %w", err)
}
