package modelclient

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// SecretSource opens a workspace's secrets.
type SecretSource interface {
	Open(ctx context.Context, workspaceID, secretID string) (string, error)
}

// Endpoints plays the agents whose prompt says custom-llm through their
// own OpenAI-compatible endpoint, and every other agent through Platform.
// Each endpoint has a limit of requests in flight from this runner and a
// circuit breaker: an endpoint that fails BreakAfter calls in a row fails
// its runs at once, for BreakFor, before it is tried again. An endpoint
// here is a workspace's URL with the credentials it is called with, never
// a URL alone: one workspace's failing calls (a wrong key) never open
// another's breaker, take its slots or show it their error text.
//
// Every credential value a run sends (the api key and each header value
// that came from a secret or an environment variable) is redacted from
// what the endpoint answers, errors and turns alike, before anything else
// sees it (see redactor).
type Endpoints struct {
	Platform model.AgentModels
	Secrets  SecretSource
	Guard    *outbound.Guard
	// EnvVars are the environment variables an agent may name as
	// env_var_label (the operator's choice: VOICEAI_AGENT_ENV_VARS).
	EnvVars map[string]bool
	// Concurrency bounds one endpoint's requests in flight (default 4).
	Concurrency int
	// Timeout bounds one request to an endpoint (default 30s); a failed
	// request is retried twice, honouring Retry-After (at most 5s).
	Timeout time.Duration
	// IdleTimeout bounds the wait between two chunks of a streamed answer
	// (default 10s): a stall, told apart from a slow first token.
	IdleTimeout time.Duration
	// MaxAnswerBytes bounds one streamed answer: content and tool
	// arguments (default 1 MiB).
	MaxAnswerBytes int64
	BreakAfter     uint32        // default 5
	BreakFor       time.Duration // default 30s
	// Observe, when set, is told of every request to an endpoint.
	Observe func(took time.Duration, err error)

	mu     sync.Mutex
	byKey  map[endpointKey]*endpoint
	client *http.Client
}

// endpointKey names an endpoint's limits: the workspace, the URL and a
// digest of the credentials (never the credentials themselves, which a
// map key could carry into a dump or a log line).
type endpointKey struct {
	workspaceID, url string
	credentials      [sha256.Size]byte
	// scope, when set, is a load test's step: its calls have limits of
	// their own (model.WithEndpointLimit), never the endpoint's usual slots.
	scope string
}

// digestSalt makes credential digests this process's own: a digest seen
// anywhere else (a heap dump) cannot be checked against guessed keys.
var digestSalt = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

// credentialDigest is the digest of what a request is authenticated with.
func credentialDigest(key string, headers http.Header) [sha256.Size]byte {
	h := hmac.New(sha256.New, digestSalt)
	fmt.Fprintf(h, "%d:%s", len(key), key)
	names := slices.Sorted(maps.Keys(headers))
	for _, n := range names {
		for _, v := range headers[n] {
			fmt.Fprintf(h, "|%d:%s=%d:%s", len(n), n, len(v), v)
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// endpoint is one workspace's limits on one endpoint.
type endpoint struct {
	url       string
	slots     chan struct{}
	breaker   *gobreaker.CircuitBreaker[struct{}]
	failures  uint32        // calls in a row that open the breaker
	pause     time.Duration // how long it stays open
	mu        sync.Mutex
	lastError error // the failure that opened it
}

func (ep *endpoint) failed(err error) {
	ep.mu.Lock()
	ep.lastError = err
	ep.mu.Unlock()
}

// openError is the answer while the breaker is open.
func (ep *endpoint) openError() error {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return fmt.Errorf("%s failed %d calls in a row (the last: %v); it is called again once %s have passed",
		host(ep.url), ep.failures, ep.lastError, ep.pause)
}

// For answers the agent's own endpoint when its llm is custom-llm (a
// custom_llm block under another llm is not used, as in the public API),
// else Platform's model.
func (e *Endpoints) For(ctx context.Context, workspaceID string, cfg model.AgentConfig, vars map[string]string) (model.AgentModel, error) {
	p := cfg.Model
	if p.LLM != agentconfig.CustomLLM {
		return e.Platform.For(ctx, workspaceID, cfg, vars)
	}
	if p.Endpoint == nil {
		return nil, &model.EndpointError{Err: errors.New("the agent's llm is custom-llm but its custom_llm is missing or invalid"), Fault: model.NotCallable}
	}
	// Checked again here: the allow-list may have changed since the agent
	// was saved, and an override is not saved at all.
	if _, bad := outbound.CheckURL(p.Endpoint.URL, e.Guard.HostAllowed, "agent endpoints"); bad != nil {
		msg := bad.Msg
		if bad.Allowable { // the agents service took it: its allow-list and the runners' differ
			msg += " (unless VOICEAI_OUTBOUND_ALLOW_HOSTS lists its host on the runners, as on the agents service)"
		}
		return nil, &model.EndpointError{Err: fmt.Errorf("%s: %s", p.Endpoint.URL, msg), Fault: model.NotCallable}
	}
	key, err := e.resolve(ctx, workspaceID, p.Endpoint.APIKey, vars)
	if err != nil {
		return nil, &model.EndpointError{Err: fmt.Errorf("api_key: %w", err), Fault: model.NotCallable}
	}
	// The values of secrets and environment variables are redacted from
	// whatever comes back. A dynamic variable's value is not: it is the
	// test's own data, readable with the test, and a reply that repeats a
	// customer's name must reach the judge as it is.
	sent := []string{key} // api_key is a secret or an env var, never a variable
	headers := http.Header{}
	for _, h := range p.Endpoint.Headers {
		v := h.Value
		if h.Ref != nil {
			if v, err = e.resolve(ctx, workspaceID, h.Ref, vars); err != nil {
				return nil, &model.EndpointError{Err: fmt.Errorf("request header %s: %w", h.Name, err), Fault: model.NotCallable}
			}
			if h.Ref.Variable == "" {
				sent = append(sent, v)
			}
		}
		headers.Set(h.Name, v)
	}
	redact := newRedactor(sent...)
	modelID := p.Endpoint.ModelID
	if modelID == "" {
		modelID = agentconfig.CustomLLM // the field is required on the wire; a one-model endpoint ignores it
	}
	k, limit := endpointKey{workspaceID: workspaceID, url: p.Endpoint.URL, credentials: credentialDigest(key, headers)}, 0
	if l, ok := model.EndpointLimitOf(ctx); ok {
		k.scope, limit = l.Scope, l.N
	}
	ep := e.endpoint(k, limit)
	// Called as ElevenLabs calls it: streaming, on the API it names.
	api := llm.APIChatCompletions
	if p.Endpoint.APIType == agentconfig.APIResponses {
		api = llm.APIResponses
	}
	client, err := llm.New(llm.Config{BaseURL: p.Endpoint.URL, APIKey: key, Model: modelID, Headers: headers,
		Timeout: e.timeout(), MaxRetries: 2, InitialBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second,
		HTTPClient: e.httpClient(), Redact: redact.String,
		Stream: true, API: api, IdleTimeout: e.IdleTimeout, MaxStreamBytes: e.MaxAnswerBytes})
	if err != nil {
		return nil, &model.EndpointError{Err: redact.Error(err), Fault: model.NotCallable}
	}
	o := OpenAI{Client: client, Observe: e.Observe, Temperature: p.Temperature, ProviderName: agentconfig.CustomLLM}
	if p.MaxTokens != nil && *p.MaxTokens > 0 {
		o.MaxTokens = *p.MaxTokens
	}
	return &customAgent{model: o, ep: ep, redact: redact}, nil
}

// resolve is the value a reference points at.
func (e *Endpoints) resolve(ctx context.Context, workspaceID string, ref *agentconfig.Ref, vars map[string]string) (string, error) {
	switch {
	case ref == nil:
		return "", nil
	case ref.SecretID != "":
		if e.Secrets == nil {
			return "", errors.New("this runner cannot open workspace secrets (VOICEAI_SECRET_KEY is not set)")
		}
		return e.Secrets.Open(ctx, workspaceID, ref.SecretID)
	case ref.EnvVar != "":
		if !e.EnvVars[ref.EnvVar] {
			return "", fmt.Errorf("environment variable %s is not one the operator allows agents to use (VOICEAI_AGENT_ENV_VARS)", ref.EnvVar)
		}
		return os.Getenv(ref.EnvVar), nil
	default:
		v, ok := vars[ref.Variable]
		if !ok {
			return "", fmt.Errorf("dynamic variable %s has no value in this run", ref.Variable)
		}
		return v, nil
	}
}

func (e *Endpoints) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 30 * time.Second
}

// httpClient dials through the guard: every resolved address is checked
// at connect time.
func (e *Endpoints) httpClient() *http.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil // a proxy would connect for us, past the guard
		t.DialContext = e.Guard.DialContext
		t.MaxIdleConnsPerHost = 64
		e.client = &http.Client{Transport: timedTransport{base: t}, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect could lead anywhere
		}}
	}
	return e.client
}

// maxEndpoints bounds the endpoints a runner keeps limits for; past it,
// the idle ones (no call in flight, breaker closed) are forgotten.
const maxEndpoints = 4096

// endpoint is k's limits; limit, when above 0, is its concurrency
// instead of Concurrency (a load test's).
func (e *Endpoints) endpoint(k endpointKey, limit int) *endpoint {
	url := k.url
	e.mu.Lock()
	defer e.mu.Unlock()
	if ep, ok := e.byKey[k]; ok {
		return ep
	}
	if e.byKey == nil {
		e.byKey = map[endpointKey]*endpoint{}
	}
	if len(e.byKey) >= maxEndpoints {
		for key, ep := range e.byKey {
			if len(ep.slots) == 0 && ep.breaker.State() == gobreaker.StateClosed {
				delete(e.byKey, key)
			}
		}
	}
	n, after, open := e.Concurrency, e.BreakAfter, e.BreakFor
	if n <= 0 {
		n = 4
	}
	if limit > 0 {
		n = limit
	}
	if after == 0 {
		after = 5
	}
	if open <= 0 {
		open = 30 * time.Second
	}
	ep := &endpoint{url: url, slots: make(chan struct{}, n), failures: after, pause: open}
	ep.breaker = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        k.workspaceID + " " + host(url),
		Timeout:     open,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= after },
		// The run's own time limit cutting a call short says nothing
		// about the endpoint.
		IsExcluded: func(err error) bool { return errors.Is(err, errRunEnded) },
	})
	e.byKey[k] = ep
	return ep
}

// errRunEnded marks a call cut short by its run's context.
var errRunEnded = errors.New("the run ended")

// customAgent is an agent played by its own endpoint. Its answers are
// never cached: the endpoint under test is what a run measures.
type customAgent struct {
	model  OpenAI
	ep     *endpoint
	redact *redactor
}

func (c *customAgent) Provider() string  { return c.model.Provider() }
func (c *customAgent) ModelName() string { return c.model.ModelName() }

// Respond waits for a slot of the endpoint, then calls it through its
// breaker. Its failures are EndpointErrors. What the endpoint answers,
// turn or error, is redacted here: nothing after this sees a credential.
func (c *customAgent) Respond(ctx context.Context, conv model.Conversation) (model.Turn, model.Usage, error) {
	queued, waited := time.Now(), false
	select {
	case c.ep.slots <- struct{}{}:
	default: // the run gives its worker slot back while it waits
		waited = true
		resume := model.ReleaseSlot(ctx)
		select {
		case c.ep.slots <- struct{}{}:
			resume()
		case <-ctx.Done():
			resume()
			return model.Turn{}, model.Usage{}, ctx.Err()
		}
	}
	defer func() { <-c.ep.slots }()
	if !model.Proceed(ctx, waited) {
		return model.Turn{}, model.Usage{}, model.ErrNotWanted
	}
	model.AddWaited(ctx, time.Since(queued))
	var turn model.Turn
	var usage model.Usage
	_, err := c.ep.breaker.Execute(func() (struct{}, error) {
		var err error
		turn, usage, err = c.model.Respond(ctx, conv)
		switch {
		case err != nil && ctx.Err() != nil:
			return struct{}{}, fmt.Errorf("%w: %w", errRunEnded, err)
		case err != nil:
			c.ep.failed(c.redact.Error(describe(err)))
		}
		return struct{}{}, err
	})
	switch {
	case err == nil:
		return c.redact.Turn(turn), usage, nil
	case ctx.Err() != nil:
		return model.Turn{}, usage, ctx.Err() // the run's time limit: Execute says so
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return model.Turn{}, usage, &model.EndpointError{Err: c.ep.openError()}
	}
	var se *llm.StreamError
	if errors.As(err, &se) {
		return model.Turn{}, usage, &model.EndpointError{Err: c.redact.Error(errors.New(se.Reason)), Fault: model.Stream}
	}
	return model.Turn{}, usage, &model.EndpointError{Err: c.redact.Error(describe(err)), Fault: faultOf(err)}
}

// faultOf is Answered when the endpoint was reached and answered, with an
// error status or with something that is no chat completion, else
// Unreachable.
func faultOf(err error) model.EndpointFault {
	var ae *llm.APIError
	if errors.As(err, &ae) || errors.Is(err, llm.ErrMalformedResponse) || errors.Is(err, llm.ErrNoChoices) || errors.Is(err, llm.ErrResponseTooLarge) {
		return model.Answered
	}
	return model.Unreachable
}

// describe shortens a transport error to what a reader of a run needs.
func describe(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op
	}
	return err
}

func host(url string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	return s
}
