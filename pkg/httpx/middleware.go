package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/trace"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/requestid"
)

// HeaderRequestID is echoed on every response.
const HeaderRequestID = "X-Request-Id"

// request is what the middlewares know of one request, kept in one value
// of its context rather than a context copy each: the attributes its
// logger carries (request_id, trace_id; the logger is built when first
// asked for, and a service behind the gateway mostly logs nothing of a
// request) and the facts inner handlers learn for its access-log line.
type request struct {
	id string // its request id

	base *slog.Logger // nil: slog.Default(); set once, at creation

	mu    sync.Mutex // guards attrs and log
	attrs []slog.Attr
	log   *slog.Logger // built from base and attrs on first use

	facts requestFacts
}

type requestKey struct{}

// requestOf is the request state in ctx, or nil.
func requestOf(ctx context.Context) *request {
	q, _ := ctx.Value(requestKey{}).(*request)
	return q
}

// stateOf is r's request state, and r carrying it: a new one where r has
// none.
func stateOf(r *http.Request) (*request, *http.Request) {
	if q := requestOf(r.Context()); q != nil {
		return q, r
	}
	q := &request{}
	return q, r.WithContext(context.WithValue(r.Context(), requestKey{}, q))
}

// newRequest is the state of a request whose logger is base carrying a.
func newRequest(id string, base *slog.Logger, a slog.Attr) *request {
	q := &request{id: id, base: base}
	q.attrs = append(make([]slog.Attr, 0, 2), a) // room for the trace id
	return q
}

// logger is the request's logger, built once.
func (q *request) logger() *slog.Logger {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.log == nil {
		q.log = q.baseLogger()
		if len(q.attrs) > 0 {
			q.log = slog.New(q.log.Handler().WithAttrs(q.attrs))
		}
	}
	return q.log
}

func (q *request) baseLogger() *slog.Logger {
	if q.base != nil {
		return q.base
	}
	return slog.Default()
}

// enabled reports whether the request's logger writes at level, without
// building it (its base is set once, at creation).
func (q *request) enabled(ctx context.Context, level slog.Level) bool {
	return q.baseLogger().Enabled(ctx, level)
}

// addAttr has the request's logger carry a (once: a key it carries is
// kept).
func (q *request) addAttr(a slog.Attr) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, have := range q.attrs {
		if have.Key == a.Key {
			return
		}
	}
	q.attrs = append(q.attrs, a)
	if q.log != nil {
		q.log = slog.New(q.log.Handler().WithAttrs([]slog.Attr{a}))
	}
}

// LoggerFrom returns the request-scoped logger, or the default logger.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if q := requestOf(ctx); q != nil {
		return q.logger()
	}
	return slog.Default()
}

// NewRequestID returns a fresh random request id.
func NewRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// wellFormedRequestID reports whether id is 1 to 128 of A-Z a-z 0-9 . _ : -
// (a hand-written check: it runs at the gateway and again at the service).
func wellFormedRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// WithRequestID accepts a well-formed incoming X-Request-Id or makes one,
// sets it on the response before anything else writes, and puts it and a
// logger carrying it into the request context.
func WithRequestID(base *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderRequestID)
		if !wellFormedRequestID(id) {
			id = NewRequestID()
			r.Header.Set(HeaderRequestID, id)
		}
		w.Header().Set(HeaderRequestID, id)
		ctx := r.Context()
		if q := requestOf(ctx); q == nil || q.id != id { // the same id twice: a chain within a chain
			ctx = context.WithValue(ctx, requestKey{}, newRequest(id, base, slog.String("request_id", id)))
		}
		next.ServeHTTP(w, r.WithContext(requestid.With(ctx, id)))
	})
}

// Recover turns a panic into a 500 in the spec's error shape, so a bug
// never drops the connection or leaks a stack to the caller.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := obs.RecorderOf(w)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				LoggerFrom(r.Context()).Error("panic serving request", "panic", p, "stack", string(debug.Stack()))
				if !rw.Started() {
					WriteError(rw, r, apperr.InternalError)
				}
			}
		}()
		next.ServeHTTP(rw, r)
	})
}

// AccessLog logs one line per request, at info: method, route template
// (or path, unrouted), status, size, duration, the client's address and
// the caller's workspace and key when known (see NoteRoute, NoteClient,
// NoteCaller), with the request and trace ids the logger carries.
func AccessLog(next http.Handler) http.Handler { return AccessLogAt(slog.LevelInfo, next) }

// AccessLogAt is AccessLog at another level: a service behind the gateway
// logs its line at debug, so a request is logged once at info.
func AccessLogAt(level slog.Level, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := obs.RecorderOf(w)
		q, r := stateOf(r)
		// A response cut short (http.ErrAbortHandler: the client hung up
		// mid-stream, or the upstream failed) is logged too, then
		// aborted as it asked.
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					if q.facts.aborted == "" {
						q.facts.aborted = "aborted"
					}
					logAccess(r, rw, q, level, start)
				}
				panic(p)
			}
		}()
		next.ServeHTTP(rw, r)
		logAccess(r, rw, q, level, start)
	})
}

// logAccess writes a request's access-log line.
func logAccess(r *http.Request, rw *obs.Recorder, q *request, level slog.Level, start time.Time) {
	facts := &q.facts
	if facts.probe {
		level = slog.LevelDebug
	}
	if !q.enabled(r.Context(), level) {
		return // a service's line, at debug: its logger is not even built
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("method", r.Method))
	if facts.route != "" {
		attrs = append(attrs, slog.String("route", facts.route))
	} else {
		attrs = append(attrs, slog.String("path", clip(r.URL.Path)))
	}
	status := rw.StatusFor(r)
	if status == obs.StatusClientClosed && facts.aborted == "" {
		facts.aborted = "client went away"
	}
	attrs = append(attrs, slog.Int("status", status), slog.Int("bytes", rw.Bytes()),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
	if facts.client != "" {
		attrs = append(attrs, slog.String("client_ip", facts.client))
	}
	if facts.workspace != "" {
		attrs = append(attrs, slog.String("workspace_id", facts.workspace), slog.String("key_id", facts.keyID))
	}
	if facts.aborted != "" {
		attrs = append(attrs, slog.String("cut_short", facts.aborted))
	}
	q.logger().LogAttrs(r.Context(), level, "http request", attrs...)
}

// requestFacts are what inner handlers learn about a request for its log
// line.
type requestFacts struct {
	route, client, workspace, keyID string
	probe                           bool
	aborted                         string // why the response was cut short, if it was
}

// NoteAborted records why a response is about to be cut short (before
// panicking with http.ErrAbortHandler), for its access-log line.
func NoteAborted(ctx context.Context, why string) {
	if q := requestOf(ctx); q != nil {
		q.facts.aborted = why
	}
}

// NoteRoute records the route template the request matched.
func NoteRoute(ctx context.Context, route string) {
	if q := requestOf(ctx); q != nil {
		q.facts.route = route
	}
}

// RouteNamer is router middleware (it runs once routing has matched):
// the request's log line and its span are named by the route template,
// so ids in paths do not make every request a name of its own.
func RouteNamer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cr := mux.CurrentRoute(r); cr != nil {
			if tpl, err := cr.GetPathTemplate(); err == nil {
				NoteRoute(r.Context(), tpl)
				if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
					span.SetName(r.Method + " " + tpl) // the name built only for a span that keeps it
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Probe marks what h serves as a probe (/healthz, /readyz): polled every
// few seconds by an orchestrator, its log line is at debug, so the info
// log stays what people did.
func Probe(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := requestOf(r.Context()); q != nil {
			q.facts.probe = true
		}
		h.ServeHTTP(w, r)
	})
}

// NoteClient records the address the request came from (behind trusted
// proxies, the client's, not the proxy's).
func NoteClient(ctx context.Context, addr string) {
	if q := requestOf(ctx); q != nil {
		q.facts.client = addr
	}
}

// NoteCaller records who the request is from.
func NoteCaller(ctx context.Context, workspaceID, keyID string) {
	if q := requestOf(ctx); q != nil {
		q.facts.workspace, q.facts.keyID = workspaceID, keyID
	}
}
