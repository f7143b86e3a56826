// Package httpx holds the HTTP conventions every service shares: the
// spec's error bodies (section 7), 422 validation bodies with loc paths,
// JSON decoding with a size limit, request ids, and panic recovery.
// Handlers are written with package api's family (api.HandlerFunc);
// this file writes errors only.
package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/gorilla/mux"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/requestid"
)

// Error is an application error of the catalog (package apperr); the
// edge gives each kind one HTTP status and the spec's body
// {"detail":{"status","message","request_id"}}.
type Error = apperr.Error

// statusOf is the HTTP status of each kind of error.
var statusOf = map[apperr.Kind]int{
	apperr.Invalid:         http.StatusBadRequest,
	apperr.Unauthenticated: http.StatusUnauthorized,
	apperr.Forbidden:       http.StatusForbidden,
	apperr.NotFound:        http.StatusNotFound,
	apperr.Conflict:        http.StatusConflict,
	apperr.TooLarge:        http.StatusRequestEntityTooLarge,
	apperr.Unsupported:     http.StatusNotAcceptable,
	apperr.UnsupportedBody: http.StatusUnsupportedMediaType,
	apperr.WrongMethod:     http.StatusMethodNotAllowed,
	apperr.RateLimited:     http.StatusTooManyRequests,
	apperr.Unavailable:     http.StatusServiceUnavailable,
	apperr.Internal:        http.StatusInternalServerError,
	apperr.Upstream:        http.StatusBadGateway,
	apperr.UpstreamTimeout: http.StatusGatewayTimeout,
}

// StatusOf is the HTTP status err is answered with.
func StatusOf(err error) int {
	if apperr.KindOf(err) == apperr.Invalid {
		var v ValidationErrors
		if errors.As(err, &v) {
			return http.StatusUnprocessableEntity
		}
	}
	if s, ok := statusOf[apperr.KindOf(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Detail errorDetail `json:"detail"`
}

type errorDetail struct {
	Status    string  `json:"status"`
	Message   string  `json:"message"`
	RequestID *string `json:"request_id"`
}

// WriteError writes err in the spec's error shape. Validation errors become
// 422 bodies; *Error keeps its status; anything else is an internal error
// whose text is never shown to the caller.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	var v ValidationErrors
	if errors.As(err, &v) {
		WriteValidation(w, r, v)
		return
	}
	var e *Error
	if errors.Is(err, ids.ErrMalformed) || errors.Is(err, events.ErrInvalidToken) {
		// An id the edge should have refused; it names nothing.
		LoggerFrom(r.Context()).Warn("malformed id reached a handler", "err", err)
		e = apperr.ResourceNotFound
	}
	if e == nil && (eventlog.IsUnavailable(err) || otherUnavailable(err)) {
		// A store electing a leader, or restarting: a retry in a moment
		// succeeds, and nothing was written.
		LoggerFrom(r.Context()).Warn("store unavailable", "err", err)
		e = apperr.ServiceUnavailable
	}
	if e == nil && r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The caller gave up (or its deadline passed) and the work stopped
		// with it: nobody reads this answer, and nothing failed.
		LoggerFrom(r.Context()).Debug("request ended before its answer", "cause", context.Cause(r.Context()))
		e = apperr.ServiceUnavailable
	}
	if e == nil && !errors.As(err, &e) {
		LoggerFrom(r.Context()).Error("internal error", "err", err)
		e = apperr.InternalError
	}
	// Every 503 tells the client when to retry (in a second, unless the
	// handler said otherwise): nothing was done, and a retry soon succeeds.
	code := StatusOf(e)
	if code == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	WriteJSON(w, code, errorBodyOf(e, requestid.From(r.Context())))
}

// ErrorJSON is e in the spec's error shape, for an answer written without
// a ResponseWriter ("" request id: null).
func ErrorJSON(e *Error, requestID string) []byte {
	b, _ := json.Marshal(errorBodyOf(e, requestID))
	return b
}

func errorBodyOf(e *Error, requestID string) errorBody {
	var rid *string
	if requestID != "" {
		rid = &requestID
	}
	return errorBody{Detail: errorDetail{Status: e.Status, Message: e.Message, RequestID: rid}}
}

// NotFoundHandler answers unknown routes in the spec's error shape.
func NotFoundHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, apperr.RouteNotFound(clip(r.Method), clip(r.URL.Path)))
	})
}

// MethodNotAllowedHandler answers a known path of router with an
// unsupported method, naming in Allow the methods it takes (RFC 9110).
func MethodNotAllowedHandler(router *mux.Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(router, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		WriteError(w, r, apperr.MethodNotAllowed(clip(r.Method), clip(r.URL.Path)))
	})
}

// allowedMethods are the methods router takes on r's path.
func allowedMethods(router *mux.Router, r *http.Request) []string {
	var out []string
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		try := r.Clone(r.Context())
		try.Method = method
		var m mux.RouteMatch
		if router.Match(try, &m) && m.MatchErr == nil {
			out = append(out, method)
		}
	}
	return out
}

// maxEcho bounds a caller's value repeated in a log line or a message.
const maxEcho = 256

// clip cuts a caller-supplied value to maxEcho bytes before it is logged
// or repeated in an answer.
func clip(s string) string { return obs.Truncate(s, maxEcho) }

// storeUnavailable reports the errors of the store the process's read
// models use (Mongo) that say it did not answer. It is set by whoever
// makes the store's client (AnswerUnavailable), so this package links no
// store driver.
var storeUnavailable atomic.Pointer[func(error) bool]

// AnswerUnavailable makes WriteError answer an error check reports as a
// 503 service_unavailable with Retry-After: a store that did not answer,
// where a retry in a moment may succeed.
func AnswerUnavailable(check func(error) bool) { storeUnavailable.Store(&check) }

func otherUnavailable(err error) bool {
	check := storeUnavailable.Load()
	return check != nil && (*check)(err)
}
