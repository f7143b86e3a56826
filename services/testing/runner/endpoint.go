package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
)

// SecretSource opens a workspace's secrets.
type SecretSource interface {
	Open(ctx context.Context, workspaceID, secretID string) (string, error)
}

// Endpoints plays the agents whose prompt says custom-llm through their
// own OpenAI-compatible endpoint, and every other agent through Platform.
// Each endpoint (by URL) has a limit of requests in flight from this
// runner and a circuit breaker: an endpoint that fails BreakAfter calls in
// a row fails its runs at once, for BreakFor, before it is tried again.
type Endpoints struct {
	Platform AgentModels
	Secrets  SecretSource
	Guard    *outbound.Guard
	// EnvVars are the environment variables an agent may name as
	// env_var_label (the operator's choice: VOICEAI_AGENT_ENV_VARS).
	EnvVars map[string]bool
	// Concurrency bounds one endpoint's requests in flight (default 4).
	Concurrency int
	// Timeout bounds one request to an endpoint (default 30s); a failed
	// request is retried twice, honouring Retry-After (at most 5s).
	Timeout    time.Duration
	BreakAfter uint32        // default 5
	BreakFor   time.Duration // default 30s
	// Observe, when set, is told of every request to an endpoint.
	Observe func(took time.Duration, err error)

	mu     sync.Mutex
	byURL  map[string]*endpoint
	client *http.Client
}

// endpoint is one agent endpoint's shared limits.
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
func (e *Endpoints) For(ctx context.Context, workspaceID string, cfg AgentConfig, vars map[string]string) (AgentModel, error) {
	p := cfg.Model
	if p.LLM != agentconfig.CustomLLM {
		return e.Platform.For(ctx, workspaceID, cfg, vars)
	}
	if p.Endpoint == nil {
		return nil, &EndpointError{errors.New("the agent's llm is custom-llm but its custom_llm is missing or invalid")}
	}
	// Checked again here: the allow-list may have changed since the agent
	// was saved, and an override is not saved at all.
	if _, bad := outbound.CheckURL(p.Endpoint.URL, e.Guard.HostAllowed, "agent endpoints"); bad != nil {
		return nil, &EndpointError{fmt.Errorf("%s: %s", p.Endpoint.URL, bad.Msg)}
	}
	key, err := e.resolve(ctx, workspaceID, p.Endpoint.APIKey, vars)
	if err != nil {
		return nil, &EndpointError{fmt.Errorf("api_key: %w", err)}
	}
	headers := http.Header{}
	for _, h := range p.Endpoint.Headers {
		v := h.Value
		if h.Ref != nil {
			if v, err = e.resolve(ctx, workspaceID, h.Ref, vars); err != nil {
				return nil, &EndpointError{fmt.Errorf("request header %s: %w", h.Name, err)}
			}
		}
		headers.Set(h.Name, v)
	}
	model := p.Endpoint.ModelID
	if model == "" {
		model = agentconfig.CustomLLM // the field is required on the wire; a one-model endpoint ignores it
	}
	ep := e.endpoint(p.Endpoint.URL)
	client, err := llm.New(llm.Config{BaseURL: p.Endpoint.URL, APIKey: key, Model: model, Headers: headers,
		Timeout: e.timeout(), MaxRetries: 2, InitialBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second,
		HTTPClient: e.httpClient()})
	if err != nil {
		return nil, &EndpointError{err}
	}
	o := OpenAI{Client: client, Observe: e.Observe, Temperature: p.Temperature, ProviderName: agentconfig.CustomLLM}
	if p.MaxTokens != nil && *p.MaxTokens > 0 {
		o.MaxTokens = *p.MaxTokens
	}
	return &customAgent{model: o, ep: ep}, nil
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
		e.client = &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect could lead anywhere
		}}
	}
	return e.client
}

func (e *Endpoints) endpoint(url string) *endpoint {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ep, ok := e.byURL[url]; ok {
		return ep
	}
	if e.byURL == nil {
		e.byURL = map[string]*endpoint{}
	}
	n, after, open := e.Concurrency, e.BreakAfter, e.BreakFor
	if n <= 0 {
		n = 4
	}
	if after == 0 {
		after = 5
	}
	if open <= 0 {
		open = 30 * time.Second
	}
	ep := &endpoint{url: url, slots: make(chan struct{}, n), failures: after, pause: open}
	ep.breaker = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        url,
		Timeout:     open,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= after },
		// The run's own time limit cutting a call short says nothing
		// about the endpoint.
		IsExcluded: func(err error) bool { return errors.Is(err, errRunEnded) },
	})
	e.byURL[url] = ep
	return ep
}

// errRunEnded marks a call cut short by its run's context.
var errRunEnded = errors.New("the run ended")

// customAgent is an agent played by its own endpoint. Its answers are
// never cached: the endpoint under test is what a run measures.
type customAgent struct {
	model OpenAI
	ep    *endpoint
}

func (c *customAgent) Provider() string  { return c.model.Provider() }
func (c *customAgent) ModelName() string { return c.model.ModelName() }

// Respond waits for a slot of the endpoint, then calls it through its
// breaker. Its failures are EndpointErrors.
func (c *customAgent) Respond(ctx context.Context, conv Conversation) (Turn, Usage, error) {
	queued := time.Now()
	select {
	case c.ep.slots <- struct{}{}:
	default: // the run gives its worker slot back while it waits
		resume := releaseSlot(ctx)
		select {
		case c.ep.slots <- struct{}{}:
			resume()
		case <-ctx.Done():
			resume()
			return Turn{}, Usage{}, ctx.Err()
		}
	}
	defer func() { <-c.ep.slots }()
	addWaited(ctx, time.Since(queued))
	var turn Turn
	var usage Usage
	_, err := c.ep.breaker.Execute(func() (struct{}, error) {
		var err error
		turn, usage, err = c.model.Respond(ctx, conv)
		switch {
		case err != nil && ctx.Err() != nil:
			return struct{}{}, fmt.Errorf("%w: %w", errRunEnded, err)
		case err != nil:
			c.ep.failed(describe(err))
		}
		return struct{}{}, err
	})
	switch {
	case err == nil:
		return turn, usage, nil
	case ctx.Err() != nil:
		return Turn{}, usage, ctx.Err() // the run's time limit: Execute says so
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return Turn{}, usage, &EndpointError{c.ep.openError()}
	}
	return Turn{}, usage, &EndpointError{describe(err)}
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
