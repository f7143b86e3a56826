// Package benchkit is what the bench commands share: a client of the
// public API that holds the admin key, and the verdict printed beside a
// goal.
package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Verdict prints a goal's outcome. The figures beside it print with
// enough decimals that a miss is never rounded into a pass.
func Verdict(met bool) string {
	if met {
		return "MET"
	}
	return "NOT MET"
}

// Client calls the platform's public API with one key.
type Client struct {
	Base string // the gateway's base URL
	Key  string // sent as x-api-key
	HTTP *http.Client
}

// NewClient keeps up to conns idle connections: one per concurrent
// caller, so that a measurement does not pay for new connections.
func NewClient(base, key string, conns int) *Client {
	return &Client{Base: base, Key: key, HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns}}}
}

// Send sends a request (an empty body sends none) with the key and, when
// set, an Idempotency-Key. The caller closes the answer's body.
func (c *Client) Send(method, path, body, idempotencyKey string) (*http.Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", c.Key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	return c.HTTP.Do(req)
}

// Do sends a request and reads the whole answer.
func (c *Client) Do(method, path, body, idempotencyKey string) ([]byte, int, error) {
	resp, err := c.Send(method, path, body, idempotencyKey)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// Call sends a request and decodes a 2xx answer into out (nil: none);
// any other status is an error that quotes the answer.
func (c *Client) Call(method, path, body string, out any) error {
	return c.call(method, path, body, "", out)
}

func (c *Client) call(method, path, body, idempotencyKey string, out any) error {
	b, code, err := c.Do(method, path, body, idempotencyKey)
	if err != nil {
		return err
	}
	if code < 200 || code > 299 {
		return fmt.Errorf("%s %s: %d %.300s", method, path, code, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// CreateAgent creates an agent from its JSON definition and returns its
// id; under the same idempotency key (when set), the same agent.
func (c *Client) CreateAgent(definition, idempotencyKey string) (string, error) {
	var created struct {
		AgentID string `json:"agent_id"`
	}
	if err := c.call(http.MethodPost, "/v1/convai/agents/create", definition, idempotencyKey, &created); err != nil {
		return "", err
	}
	return created.AgentID, nil
}

// InParallel runs work(1) … work(n) on clients goroutines, each taking
// the next i as it finishes one, stopping at the first error, and returns
// how long it took.
func InParallel(clients, n int, work func(i int64) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := work(i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errc)
	return took, <-errc
}
