package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/trace"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/requestid"
)

// HeaderRequestID is echoed on every response.
const HeaderRequestID = "X-Request-Id"

type ctxKey int

const loggerKey ctxKey = 0

var wellFormedRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// LoggerFrom returns the request-scoped logger, or the default logger.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// NewRequestID returns a fresh random request id.
func NewRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// WithRequestID accepts a well-formed incoming X-Request-Id or makes one,
// sets it on the response before anything else writes, and puts it and a
// logger carrying it into the request context.
func WithRequestID(base *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderRequestID)
		if !wellFormedRequestID.MatchString(id) {
			id = NewRequestID()
			r.Header.Set(HeaderRequestID, id)
		}
		w.Header().Set(HeaderRequestID, id)
		ctx := requestid.With(r.Context(), id)
		ctx = context.WithValue(ctx, loggerKey, base.With("request_id", id))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Recover turns a panic into a 500 in the spec's error shape, so a bug
// never drops the connection or leaks a stack to the caller.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				LoggerFrom(r.Context()).Error("panic serving request", "panic", p, "stack", string(debug.Stack()))
				if !rw.wroteHeader {
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
		rw := &statusWriter{ResponseWriter: w}
		facts := &requestFacts{}
		r = r.WithContext(context.WithValue(r.Context(), factsKey{}, facts))
		// A response cut short (http.ErrAbortHandler: the client hung up
		// mid-stream, or the upstream failed) is logged too, then
		// aborted as it asked.
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					if facts.aborted == "" {
						facts.aborted = "aborted"
					}
					logAccess(r, rw, facts, level, start)
				}
				panic(p)
			}
		}()
		next.ServeHTTP(rw, r)
		logAccess(r, rw, facts, level, start)
	})
}

// logAccess writes a request's access-log line.
func logAccess(r *http.Request, rw *statusWriter, facts *requestFacts, level slog.Level, start time.Time) {
	log := LoggerFrom(r.Context())
	if facts.probe {
		level = slog.LevelDebug
	}
	if !log.Enabled(r.Context(), level) {
		return
	}
	attrs := []any{"method", r.Method}
	if facts.route != "" {
		attrs = append(attrs, "route", facts.route)
	} else {
		attrs = append(attrs, "path", clip(r.URL.Path))
	}
	attrs = append(attrs, "status", rw.Status(), "bytes", rw.bytes, "duration_ms", float64(time.Since(start).Microseconds())/1000)
	if facts.client != "" {
		attrs = append(attrs, "client_ip", facts.client)
	}
	if facts.workspace != "" {
		attrs = append(attrs, "workspace_id", facts.workspace, "key_id", facts.keyID)
	}
	if facts.aborted != "" {
		attrs = append(attrs, "cut_short", facts.aborted)
	}
	log.Log(r.Context(), level, "http request", attrs...)
}

// requestFacts are what inner handlers learn about a request for its log
// line.
type requestFacts struct {
	route, client, workspace, keyID string
	probe                           bool
	aborted                         string // why the response was cut short, if it was
}

type factsKey struct{}

// NoteAborted records why a response is about to be cut short (before
// panicking with http.ErrAbortHandler), for its access-log line.
func NoteAborted(ctx context.Context, why string) {
	if f, ok := ctx.Value(factsKey{}).(*requestFacts); ok {
		f.aborted = why
	}
}

// NoteRoute records the route template the request matched.
func NoteRoute(ctx context.Context, route string) {
	if f, ok := ctx.Value(factsKey{}).(*requestFacts); ok {
		f.route = route
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
				trace.SpanFromContext(r.Context()).SetName(r.Method + " " + tpl)
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
		if f, ok := r.Context().Value(factsKey{}).(*requestFacts); ok {
			f.probe = true
		}
		h.ServeHTTP(w, r)
	})
}

// NoteClient records the address the request came from (behind trusted
// proxies, the client's, not the proxy's).
func NoteClient(ctx context.Context, addr string) {
	if f, ok := ctx.Value(factsKey{}).(*requestFacts); ok {
		f.client = addr
	}
}

// NoteCaller records who the request is from.
func NoteCaller(ctx context.Context, workspaceID, keyID string) {
	if f, ok := ctx.Value(factsKey{}).(*requestFacts); ok {
		f.workspace, f.keyID = workspaceID, keyID
	}
}

// statusWriter remembers the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status      int
	bytes       int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.wroteHeader {
		// The response is under way (a handler failing mid-body, say after
		// a client stopped reading): a second status changes nothing, and
		// Go would log it as superfluous, an ERROR-looking line no one can
		// act on.
		return
	}
	if code >= 200 { // an informational 1xx may precede the status
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Status is the status written, 200 when the handler wrote none.
func (w *statusWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets streaming handlers push partial output.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
