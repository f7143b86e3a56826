// Package gateway is the only public listener: it authenticates API keys,
// enforces per-key rate limits shared by every replica, stamps request
// ids, and forwards each request over NATS to the service that owns it.
// It holds no domain logic.
package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/natsx"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/gateway/keycache"
	"github.com/voiceai-platform/voiceai/services/gateway/ratelimit"
)

// Settings tune one gateway.
type Settings struct {
	Limits ratelimit.Limits // defaults for keys without their own
	// MaxLimits is the ceiling of a key's own limits (0: none).
	MaxLimits       ratelimit.Limits
	MaxBodyBytes    int64
	UpstreamTimeout time.Duration
	TrustedProxies  []netip.Prefix // peers whose X-Forwarded-For is believed
	// HedgeAfter is how long a repeatable request waits for its answer
	// before a second copy is sent (natsx.Forwarder); 0 is its default.
	HedgeAfter time.Duration
	// ConsoleSecret is the deployment secret (VOICEAI_SECRET_KEY): it
	// seals the console's sessions, so every replica needs the same one.
	// Empty: the console's pages load but sign-in is refused.
	ConsoleSecret string
	// WritesHeld, when set, is asked before each write is forwarded: an
	// error refuses it at once (the all-in-one's disk guard answers
	// apperr.StorageFull while its disk is nearly full).
	WritesHeld func() error
	// InProcess calls a service this process serves itself directly, not
	// through NATS (natsx.Forwarder.InProcess): the all-in-one platform.
	InProcess bool
	// ShutdownDelay: a stopping gateway serves this long, not ready,
	// before it closes its listener (Config.ShutdownDelay).
	ShutdownDelay time.Duration
}

// Gateway serves the public HTTP API.
type Gateway struct {
	settings Settings
	nc       *nats.Conn
	keys     *keycache.Cache
	feed     *eventstore.Follower
	catchUp  *keycache.CatchUp
	limiter  *ratelimit.Limiter
	fallback *ratelimit.Local // while the shared limiter cannot answer
	// localLimits counts requests limited by the fallback.
	localLimits prometheus.Counter
	fwd         *natsx.Forwarder
	log         *slog.Logger
	metrics     *obs.HTTPMetrics
	denials     *prometheus.CounterVec // requests refused before forwarding, by status
	now         func() time.Time
	probes      obs.Probes
	sessions    *sessions // the console's; nil without a secret
	// stopping ends as Serve begins to drain (stop): a poll that would
	// wait out the drain (Takes) is answered at once, to be sent again to
	// another replica.
	stopping context.Context
	stop     context.CancelFunc
}

// New starts following key events and returns a gateway. It does not wait
// for the key cache: /readyz reports when it has caught up.
func New(ctx context.Context, d runtime.Deps, s Settings) (*Gateway, error) {
	limiter, err := ratelimit.New(ctx, d.JS, d.StreamReplicas)
	if err != nil {
		return nil, err
	}
	keys := keycache.New()
	feed, err := keycache.Start(ctx, d.JS, keys, d.Logger)
	if err != nil {
		return nil, err
	}
	sess, err := newSessions(s.ConsoleSecret)
	if err != nil {
		return nil, err
	}
	if sess != nil {
		if sess.ended, err = newKVSignOuts(ctx, d.JS, d.StreamReplicas, d.Logger); err != nil {
			return nil, err
		}
	}
	// Not ready until every key is loaded and the shared counters answer,
	// nor while the key cache lags the stream (a stalled feed would go on
	// accepting keys revoked since): on the public listener's /readyz and
	// on the internal endpoint's, which orchestrators probe.
	catchUp := keycache.NewCatchUp(d.JS, keys)
	keysLoaded := func(ctx context.Context) error {
		if !feed.IsReady() {
			return errors.New("loading")
		}
		return catchUp.Behind(ctx)
	}
	// Not ready once stopping (Serve): a load balancer sends no more.
	stopping, stop := context.WithCancel(context.Background())
	serving := func(context.Context) error {
		if stopping.Err() != nil {
			return errors.New("stopping")
		}
		return nil
	}
	d.AddReadyCheck("rate_limits", limiter.Ready)
	d.AddReadyCheck("api_keys", keysLoaded)
	d.AddReadyCheck("serving", serving)
	probes := d.Probes()
	// Also where d was built without NewDeps (tests), which has no
	// shared checks.
	probes.Ready["rate_limits"], probes.Ready["api_keys"], probes.Ready["serving"] = limiter.Ready, keysLoaded, serving
	return &Gateway{
		probes: probes, settings: s, nc: d.NC, keys: keys, feed: feed, catchUp: catchUp, limiter: limiter, log: d.Logger,
		stopping: stopping, stop: stop,
		fwd:      &natsx.Forwarder{NC: d.NC, Timeout: s.UpstreamTimeout, MaxBody: s.MaxBodyBytes, HedgeAfter: s.HedgeAfter, InProcess: s.InProcess},
		metrics:  obs.NewHTTPMetrics(d.Metrics, "gateway"),
		denials:  newDenials(d.Metrics),
		fallback: ratelimit.NewLocal(),
		localLimits: obs.Register(d.Metrics, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voiceai_gateway_rate_limit_local_total",
			Help: "Requests rate-limited by this gateway alone because the shared counters could not answer.",
		})),
		now:      time.Now,
		sessions: sess,
	}, nil
}

func newDenials(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voiceai_gateway_denials_total",
		Help: "Requests the gateway refused before forwarding, by HTTP code and application status.",
	}, []string{"code", "status"})
	reg.MustRegister(c)
	return c
}

// KeysReady is closed once every existing key is loaded.
func (g *Gateway) KeysReady() <-chan struct{} { return g.feed.Ready() }

// Handler is the public HTTP handler.
func (g *Gateway) Handler() http.Handler {
	top, operations := g.routes()
	authenticated := g.Authenticate(operations)
	// An operation's request goes to authentication at once: the top
	// router would only try each of its other routes first and copy the
	// request twice, on the path of every call.
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isOperationPath(r.URL.Path) {
			authenticated.ServeHTTP(w, r)
			return
		}
		top.ServeHTTP(w, r)
	})
	return httpx.WithRequestID(g.log, httpx.WithTraceparent(httpx.Recover(httpx.AccessLog(g.noteClient(route)))))
}

// isOperationPath reports whether the top router would hand path to its
// catch-all, the operations: under /v1/ but not one of the API's
// documents. (The router matches paths as sent: an unclean one, say
// /v1/../healthz, is an operation path that no operation matches.)
func isOperationPath(p string) bool {
	return strings.HasPrefix(p, "/v1/") && p != api.OpenAPIPath && p != api.AsyncAPIPath
}

// noteClient puts the client's address on the request's access log line:
// what an operator blocks when someone guesses keys.
func (g *Gateway) noteClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := g.clientIP(r); a.IsValid() {
			httpx.NoteClient(r.Context(), a.String())
		}
		next.ServeHTTP(w, r)
	})
}

// routes are the probes, the API's document and its reference page, the
// console (its pages and session), and,
// behind authentication, the router of every operation of the API.
func (g *Gateway) routes() (top, operations *mux.Router) {
	// Paths are matched as sent, never cleaned: the router's default
	// answers a path with dot segments or an encoded slash ("x%2F..%2F"
	// + an id) with a 301 to the cleaned path, and a client that follows
	// it (fetch keeps DELETE and PATCH) acts on another resource than the
	// one it named. Such a path matches no route: a 404 in the error shape.
	operations = mux.NewRouter().SkipClean(true)
	operations.Use(g.metrics.Middleware, httpx.RouteNamer)
	operations.NotFoundHandler = httpx.NotFoundHandler()
	operations.MethodNotAllowedHandler = httpx.MethodNotAllowedHandler(operations)
	for _, op := range api.Operations {
		api.Route(operations, op).Handler(g.forwardTo(op))
	}

	top = mux.NewRouter().SkipClean(true)
	top.Handle("/healthz", httpx.Probe(g.probes.LiveHandler())).Methods(http.MethodGet, http.MethodHead)
	top.Handle("/readyz", httpx.Probe(g.probes.ReadyHandler())).Methods(http.MethodGet, http.MethodHead)
	top.Handle(api.OpenAPIPath, documentHandler(api.OpenAPI)).Methods(http.MethodGet, http.MethodHead)
	top.Handle(api.AsyncAPIPath, documentHandler(api.AsyncAPI)).Methods(http.MethodGet, http.MethodHead)
	top.Handle(api.DocsPath, http.RedirectHandler(api.DocsPath+"/", http.StatusMovedPermanently)).Methods(http.MethodGet, http.MethodHead)
	top.PathPrefix(api.DocsPath+"/").Handler(docsHandler()).Methods(http.MethodGet, http.MethodHead)
	console := g.console()
	top.Handle(api.ConsolePath, console).Methods(http.MethodGet, http.MethodHead)
	top.Handle(api.ConsoleSessionPath, console).Methods(http.MethodGet, http.MethodPost, http.MethodDelete)
	top.PathPrefix(api.ConsolePath+"/").Handler(console).Methods(http.MethodGet, http.MethodHead)
	top.MatcherFunc(isConsole).Handler(console) // any other method: the console's 405, with its headers
	top.PathPrefix("/").Handler(g.Authenticate(operations))
	return top, operations
}

// Routes lists what the gateway serves as "METHOD /path/template": the
// unauthenticated routes (the docs' one is a prefix), then the operations.
func (g *Gateway) Routes() []string {
	var out []string
	walk := func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		methods, errM := route.GetMethods()
		path, errP := route.GetPathTemplate()
		if errM != nil || errP != nil {
			return nil // the catch-all that leads to the operations
		}
		for _, m := range methods {
			out = append(out, m+" "+path)
		}
		return nil
	}
	top, operations := g.routes()
	_ = top.Walk(walk)
	_ = operations.Walk(walk)
	return out
}

// forwardTo checks the operation's permission and what the caller put in
// the path and headers, then relays the request: a request that cannot
// succeed costs no service a thing, and no caller-supplied id reaches NATS
// unchecked. Services check again, since they may be reached by other
// means.
func (g *Gateway) forwardTo(op api.Operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !callerFrom(r).HasAny(op.Perms...) {
			g.deny(w, r, apperr.MissingPermission(op.Perms...))
			return
		}
		if err := api.CheckRequest(r); err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		if g.settings.WritesHeld != nil && stores(op) {
			if err := g.settings.WritesHeld(); err != nil {
				g.holdWrite(w, r, err)
				return
			}
		}
		if keyWrites[op.Name] {
			w = &beforeSuccess{ResponseWriter: w, hook: func() {
				// This replica then answers as the key now is; if it could
				// not catch up, its answer may lag the write a moment.
				if err := g.catchUp.Wait(r.Context()); err != nil {
					httpx.LoggerFrom(r.Context()).Warn("key cache not caught up with a key change before answering it", "err", err)
				}
			}}
		}
		// Only what the operation allows is sent twice (hedged, or sent
		// again after a reconnect): a read, or a write with a key it
		// honours. Any other write is sent once, so the gateway never
		// makes two commands of one.
		if op.Repeatable(r) {
			r = natsx.Repeatable(r)
		}
		if op.Takes {
			// A poll may wait longer than the drain: it ends as the
			// gateway begins to stop, answered 503 (poll again).
			ctx, cancel := context.WithCancelCause(r.Context())
			defer cancel(nil)
			defer context.AfterFunc(g.stopping, func() { cancel(natsx.ErrStopping) })()
			r = r.WithContext(ctx)
		}
		g.fwd.ForwardWithin(w, r, op.Service, op.Timeout)
	})
}

// stores reports whether op may take room in the stores: any write but
// a relay's poll, which takes deliveries off their queue.
func stores(op api.Operation) bool { return !op.Reads() && !op.Safe && !op.Takes }

// holdWrite refuses a write the stores have no room for: nothing was
// sent, and a retry in half a minute may find space freed.
func (g *Gateway) holdWrite(w http.ResponseWriter, r *http.Request, err error) {
	e := apperr.StorageFull
	errors.As(err, &e)
	w.Header().Set("Retry-After", "30")
	g.deny(w, r, e)
}

// keyWrites are the operations whose success this gateway's key cache must
// reflect before the caller hears of it: the caller's next request through
// it finds a new key, honours a changed one and refuses a revoked one.
// (Other gateway replicas follow within milliseconds.)
var keyWrites = map[string]bool{api.CreateKey.Name: true, api.UpdateKey.Name: true, api.RevokeKey.Name: true}

// beforeSuccess runs hook once before a 2xx status is written.
type beforeSuccess struct {
	http.ResponseWriter
	hook func()
	done bool
}

func (b *beforeSuccess) WriteHeader(code int) {
	if !b.done && code >= 200 && code < 300 {
		b.hook()
	}
	b.done = true
	b.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (b *beforeSuccess) Unwrap() http.ResponseWriter { return b.ResponseWriter }

func (b *beforeSuccess) Write(p []byte) (int, error) {
	if !b.done {
		b.WriteHeader(http.StatusOK)
	}
	return b.ResponseWriter.Write(p)
}

// Serve listens on addr until ctx ends, then drains in-flight requests.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	g.stop()
	if d := g.settings.ShutdownDelay; d > 0 {
		g.log.Info("stopping: not ready, serving on before the listener closes", "for", d)
		timer := time.NewTimer(d)
		select {
		case err := <-errc:
			timer.Stop()
			return err
		case <-timer.C:
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
