package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// client calls the platform's public HTTP API through the gateway.
type client struct {
	base string // no trailing slash
	key  string
	http *http.Client
}

// APIError is an error answer of the API (spec section 7), reduced to
// what a person needs: the server's message, its stable status and the
// request id to quote when asking for help.
type APIError struct {
	Code      int    // HTTP status
	Status    string // e.g. "agent_not_found"; empty when the body had none
	Message   string
	RequestID string
	// RetryAfter is how long a 429 or 503 asked the client to wait (its
	// Retry-After header); 0 when it did not say.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	b.WriteString(" (HTTP " + strconv.Itoa(e.Code))
	if e.Status != "" {
		b.WriteString(", " + e.Status)
	}
	if e.RequestID != "" {
		b.WriteString(", request id " + e.RequestID)
	}
	b.WriteString(")")
	return b.String()
}

// parseError reads the body shapes of spec section 7: the application
// error, the 422 list, and the simple {detail: string}.
func parseError(code int, header http.Header, body []byte) *APIError {
	e := &APIError{Code: code, RequestID: header.Get("X-Request-Id")}
	var raw struct {
		Detail json.RawMessage `json:"detail"`
	}
	_ = json.Unmarshal(body, &raw)
	var app struct {
		Status    string  `json:"status"`
		Message   string  `json:"message"`
		RequestID *string `json:"request_id"`
	}
	var list []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	var text string
	switch {
	case json.Unmarshal(raw.Detail, &app) == nil && app.Message != "":
		e.Status, e.Message = app.Status, app.Message
		if app.RequestID != nil {
			e.RequestID = *app.RequestID
		}
	case json.Unmarshal(raw.Detail, &list) == nil && len(list) > 0:
		e.Status = "validation_error"
		msgs := make([]string, len(list))
		for i, d := range list {
			loc := make([]string, len(d.Loc))
			for j, l := range d.Loc {
				loc[j] = fmt.Sprint(l)
			}
			msgs[i] = strings.Join(loc, ".") + ": " + d.Msg
		}
		e.Message = strings.Join(msgs, "; ")
	case json.Unmarshal(raw.Detail, &text) == nil && text != "":
		e.Message = text
	default:
		// Not the spec's shape (a proxy in the way?): show what came back.
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 300 {
			e.Message = e.Message[:300] + "…"
		}
		if e.Message == "" {
			e.Message = http.StatusText(code)
		}
	}
	return e
}

// maxRetryWait bounds how long a refused request waits to be tried again.
const maxRetryWait = 10 * time.Second

// do sends one request (body marshalled as JSON unless nil) and returns
// the body of a 2xx answer. A 429 or 503 that says when to come back is
// tried again, up to three times: writes carry one Idempotency-Key across
// the attempts, so the server applies them at most once.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body any, poll bool) ([]byte, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	idem := ""
	if method != http.MethodGet && !poll {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		idem = "voiceai-cli-" + hex.EncodeToString(b)
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		req.Header.Set("x-api-key", c.key)
		req.Header.Set("User-Agent", "voiceai-cli")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var ue *url.Error // its text repeats the whole URL; the base is enough
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, &netError{fmt.Errorf("%s %s: %w", method, c.base, err)}
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
		}
		if resp.StatusCode/100 == 2 {
			return out, nil
		}
		wait, ok := retryAfter(resp)
		if attempt < 3 && ok && wait <= maxRetryWait {
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		e := parseError(resp.StatusCode, resp.Header, out)
		if ok {
			e.RetryAfter = wait
		}
		return nil, e
	}
}

// netError is a request that got no answer: the connection was refused
// or reset, the name did not resolve, the answer did not come in time.
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// retryAfter is how long a 429 or 503 asks the client to wait.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || s < 0 {
		return 0, false
	}
	return time.Duration(s) * time.Second, true
}

// call sends r with the ids filling its path variables in order, decodes
// the answer into v (when not nil) and returns the raw body (for --json).
func (c *client) call(ctx context.Context, r route, ids []string, query url.Values, body, v any) ([]byte, error) {
	raw, err := c.do(ctx, r.Method, r.path(ids...), query, body, r.Poll)
	if err != nil {
		return nil, err
	}
	if v != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, v); err != nil {
			return nil, fmt.Errorf("%s %s: unexpected answer: %w", r.Method, r.Path, err)
		}
	}
	return raw, nil
}
