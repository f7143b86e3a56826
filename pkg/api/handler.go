package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// The one way to write a handler. A service's handler is a HandlerFunc:
// it reads the request through its Call (the caller, the path's ids, the
// checked query, the body) and returns the answer's body, or an error of
// the catalog (package apperr). Handle writes either: the body as JSON
// with the operation's usual success status (the first of its Success),
// nothing when that status is 204, an error in the spec's shape. A handler
// never sees the ResponseWriter; the few answers that are not one JSON
// value with the usual status say so with Status or Stream.

// HandlerFunc serves an operation: what it returns is answered by Handle.
type HandlerFunc func(c *Call) (any, error)

// Call is one request to an operation, as its handler reads it. The edge
// has checked all of it against the operation before the handler runs:
// the caller's permission, the path's ids, the query and the body's
// schema.
type Call struct {
	r    *http.Request
	op   Operation
	body *sentBody // nil where the edge had no need to read it
}

// Context is the request's: it ends when the caller leaves.
func (c *Call) Context() context.Context { return c.r.Context() }

// Caller is who sends the request, with its command id (CommandID).
func (c *Call) Caller() principal.Caller { return CallerOf(c.r) }

// ID is the id of the resource the path names: its last path variable
// ("key_2" of /v1/service-accounts/sa_1/api-keys/key_2).
func (c *Call) ID() string {
	open, end := strings.LastIndexByte(c.op.Path, '{'), strings.LastIndexByte(c.op.Path, '}')
	if open < 0 || end < open {
		return ""
	}
	return mux.Vars(c.r)[c.op.Path[open+1:end]]
}

// PathID is the path variable name of the operation's path (an id of
// the id grammar: the edge answered a malformed one 404). A name the
// path does not have is a programming error.
func (c *Call) PathID(name string) string {
	if !strings.Contains(c.op.Path, "{"+name+"}") {
		panic(fmt.Sprintf("api: %s's path %s has no {%s}", c.op.Name, c.op.Path, name))
	}
	return mux.Vars(c.r)[name]
}

// Query decodes the operation's documented query parameters into the
// struct v points to (DecodeQuery).
func (c *Call) Query(v any) error { return DecodeQuery(c.r, v) }

// HasQuery reports whether the query names parameter name, even with an
// empty value (which Query leaves out).
func (c *Call) HasQuery(name string) bool { return c.r.URL.Query().Has(name) }

// Header is the values of the request's header name.
func (c *Call) Header(name string) []string { return c.r.Header.Values(name) }

// Body decodes the request's JSON body (at most the operation's body
// limit) into v: 400 when it is not JSON, 422 at a field of the wrong
// type, 413 beyond the limit.
func (c *Call) Body(v any) error {
	body, err := c.RawBody()
	if err != nil {
		return err
	}
	if c.body != nil && c.body.checked {
		return apperr.DecodeCheckedJSON(body, v)
	}
	return apperr.DecodeJSON(body, v)
}

// StatusOf is the HTTP status the edge answers err with, for an answer
// that names an item's outcome in its body (a batch of several reads).
func StatusOf(err error) int { return httpx.StatusOf(err) }

// RawBody is the request's body as sent (at most the operation's body
// limit: 413 beyond; 422 when empty), for a handler that reads it more
// than one way.
func (c *Call) RawBody() ([]byte, error) {
	if c.body == nil {
		return httpx.ReadBody(c.r)
	}
	if c.body.err != nil {
		return nil, c.body.err
	}
	return c.body.data, nil
}

// Status answers body with code, one of the operation's success statuses
// other than its usual one (a create that found what it would have
// made answers 200, not 201).
func Status(code int, body any) any { return status{code, body} }

type status struct {
	code int
	body any
}

// Stream answers 200 with a body of type contentType that write writes
// as it goes, for an answer too large to build in memory. Once write has
// begun the status is sent: if it fails the connection is cut, so the
// client sees a truncated answer rather than a wrong one.
func Stream(contentType string, write func(io.Writer) error) any {
	return stream{contentType, write}
}

type stream struct {
	contentType string
	write       func(io.Writer) error
}

// View is the answer view(x), once the use case that gave x succeeded,
// or its error: a handler's last line.
func View[T, V any](x T, err error, view func(T) V) (any, error) {
	if err != nil {
		return nil, err
	}
	return view(x), nil
}

// Command runs do for the request's caller on its JSON body, and answers
// what it gives as view.
func Command[In, Out, V any](c *Call, do func(context.Context, principal.Caller, In) (Out, error), view func(Out) V) (any, error) {
	var in In
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	out, err := do(c.Context(), c.Caller(), in)
	return View(out, err, view)
}

// CommandOn is Command on the resource the path names (ID).
func CommandOn[In, Out, V any](c *Call, do func(context.Context, principal.Caller, string, In) (Out, error), view func(Out) V) (any, error) {
	return Command(c, func(ctx context.Context, caller principal.Caller, in In) (Out, error) {
		return do(ctx, caller, c.ID(), in)
	}, view)
}

// Remove runs do for the request's caller on the resource the path names
// (ID); the operation answers its usual status (204) with no body.
func Remove(c *Call, do func(context.Context, principal.Caller, string) error) (any, error) {
	return nil, do(c.Context(), c.Caller(), c.ID())
}

// answer writes what op's handler returned: the edge's half of the
// family.
func answer(w http.ResponseWriter, r *http.Request, op Operation, out any) {
	code := op.Success[0]
	switch a := out.(type) {
	case stream:
		if !slices.Contains(op.Success, http.StatusOK) {
			httpx.WriteError(w, r, fmt.Errorf("api: %s streamed, but 200 is not one of its success statuses %v", op.Name, op.Success))
			return
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(http.StatusOK)
		if err := a.write(w); err != nil {
			// The status line is sent; cut the body short. A caller that
			// left (or stopped reading) is nobody's error.
			if log := httpx.LoggerFrom(r.Context()); r.Context().Err() != nil {
				log.Debug("stream ended with its caller", "operation", op.Name, "cause", context.Cause(r.Context()))
			} else {
				log.Error("stream failed", "operation", op.Name, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
		return
	case status:
		if !slices.Contains(op.Success, a.code) {
			httpx.WriteError(w, r, fmt.Errorf("api: %s answered %d, not one of its success statuses %v", op.Name, a.code, op.Success))
			return
		}
		code, out = a.code, a.body
	}
	if code == http.StatusNoContent {
		w.WriteHeader(code)
		return
	}
	httpx.WriteJSON(w, code, out)
}
