// Package runtime is the lifecycle every service binary shares: connect to
// NATS (JetStream) and Mongo, log as JSON, expose metrics, serve the
// service's HTTP handler over NATS, and drain everything on shutdown.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/auth"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/natsx"
	"github.com/voiceai-platform/voiceai/pkg/obs"
)

// Deps are the connections a service runs on. The all-in-one binary
// builds one set and shares it; a standalone binary builds its own.
type Deps struct {
	NC             *nats.Conn
	JS             jetstream.JetStream
	Mongo          *mongo.Client
	Logger         *slog.Logger
	Metrics        prometheus.Registerer
	StreamReplicas int
	// Link is NC's health (nil in tests that dial NATS themselves).
	Link *Link
	// ReadIndex is config.ReadIndexStore (the default) or ReadIndexMemory.
	ReadIndex string
	// Now is the process's clock (nil: the wall clock); see Clock.
	Now func() time.Time
	// WritesHeld, when set, says why writes must wait (the disk under
	// the process's data is nearly full), or nil: the consumers that
	// write take no more work while it says so.
	WritesHeld func() error

	lag   *consumerLag // see WatchConsumer
	added *addedChecks // see AddReadyCheck, AddLiveCheck
}

// Clock is the clock the process's apps are built with: the one place a
// default is chosen, so every app takes its clock instead of falling back.
func (d Deps) Clock() func() time.Time {
	if d.Now != nil {
		return d.Now
	}
	return time.Now
}

// addedChecks are the health checks a service adds to its process's,
// shared by every copy of its Deps.
type addedChecks struct {
	mu    sync.Mutex
	ready map[string]obs.Check
	live  map[string]obs.Check
}

// AddReadyCheck makes check part of the process's readiness: /readyz on
// its internal endpoint (what orchestrators probe) answers not ready while
// it fails. A process built without NewDeps has nowhere to add it.
func (d Deps) AddReadyCheck(name string, check obs.Check) { d.add(false, name, check) }

// AddLiveCheck makes check part of the process's liveness: /healthz
// answers failing while it fails, for an orchestrator to restart the
// process. Only for what the process cannot recover from by itself.
func (d Deps) AddLiveCheck(name string, check obs.Check) { d.add(true, name, check) }

func (d Deps) add(live bool, name string, check obs.Check) {
	if d.added == nil {
		return
	}
	d.added.mu.Lock()
	defer d.added.mu.Unlock()
	if live {
		d.added.live[name] = check
	} else {
		d.added.ready[name] = check
	}
}

// Connect dials NATS (see DialNATS) and, unless mongoURI is empty, Mongo,
// whose driver reconnects by itself. Both are retried with back-off
// until ctx ends: a service may start before its stores, in any order.
func Connect(ctx context.Context, name, natsURL, mongoURI string, logger *slog.Logger, reg prometheus.Registerer, extra ...nats.Option) (*Link, *mongo.Client, error) {
	link, err := DialNATS(ctx, name, natsURL, logger, reg, extra...)
	if err != nil {
		return nil, nil, err
	}
	if mongoURI == "" {
		return link, nil, nil // a service without a store (the gateway)
	}
	mc, err := mongo.Connect(options.Client().ApplyURI(mongoURI).SetAppName("voiceai-" + name).
		SetServerSelectionTimeout(StoreSelectionTimeout))
	if err != nil {
		link.Close()
		return nil, nil, fmt.Errorf("connect mongo: %w", err)
	}
	httpx.AnswerUnavailable(mongox.IsUnavailable)
	err = untilReachable(ctx, "mongo", mongoURI, logger, func() error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := mc.Ping(pctx, nil)
		if authErr := (*auth.Error)(nil); errors.As(err, &authErr) {
			return refused{fmt.Errorf("the store refused the login in VOICEAI_MONGO_URI (%s): %w; check its user and password", config.Redacted(mongoURI), err)}
		}
		return err
	})
	if err != nil {
		link.Close()
		_ = mc.Disconnect(context.Background())
		return nil, nil, err
	}
	return link, mc, nil
}

// StoreSelectionTimeout bounds how long a store operation waits for a
// server to send it to (the driver's default is 30 s, the gateway's whole
// wait for a service): with the store down, a request is answered 503
// with Retry-After in this time (mongox.IsUnavailable), and a replica
// set's election (about 12 s) is ridden out by the caller's retry.
const StoreSelectionTimeout = 5 * time.Second

// AsyncPublishTimeout bounds the wait for an async publish's
// acknowledgement: longer than a stream leader election (under 10 s in
// the cluster tier), after which the publisher's caller retries.
const AsyncPublishTimeout = 15 * time.Second

// NewDeps wraps established connections.
func NewDeps(nc *nats.Conn, mc *mongo.Client, logger *slog.Logger, reg prometheus.Registerer, replicas int) (Deps, error) {
	// An async publish whose acknowledgement is lost (its node died with
	// it) would otherwise wait forever: nats.go sets no time-out by
	// default, and whoever waits on it in order (a runner's acker) stalls.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(AsyncPublishTimeout))
	if err != nil {
		return Deps{}, err
	}
	if replicas == 0 {
		replicas = 1
	}
	d := Deps{NC: nc, JS: js, Mongo: mc, Logger: logger, Metrics: reg, StreamReplicas: replicas,
		added: &addedChecks{ready: map[string]obs.Check{}, live: map[string]obs.Check{}}}
	if reg != nil {
		d.lag = newConsumerLag(js)
		if err := reg.Register(d.lag); err != nil {
			return Deps{}, err
		}
	}
	return d, nil
}

// Probes are the health checks of a process on d: NATS connected (ready)
// and not lost for good (live), and the store answering (ready). Deps
// without a Link (a connection the caller dialled) check readiness only.
func (d Deps) Probes() obs.Probes {
	p := obs.Probes{Live: map[string]obs.Check{}, Ready: map[string]obs.Check{}}
	switch {
	case d.Link != nil:
		p.Live["nats"], p.Ready["nats"] = d.Link.Alive, d.Link.Ready
	case d.NC != nil:
		p.Ready["nats"] = (&Link{NC: d.NC}).Ready
	}
	if d.Mongo != nil {
		p.Ready["store"] = func(ctx context.Context) error { return d.Mongo.Ping(ctx, nil) }
	}
	if d.added != nil {
		d.added.mu.Lock()
		defer d.added.mu.Unlock()
		maps.Copy(p.Ready, d.added.ready)
		maps.Copy(p.Live, d.added.live)
	}
	return p
}

// Version is what every service reports in its NATS service info: the
// suite is built and released as one.
const Version = "0.1.0"

// Database is the MongoDB database of the service name: each service owns
// its own.
func (d Deps) Database(name string) *mongo.Database { return d.Mongo.Database(DatabaseName(name)) }

// DatabaseName is the name of the service's own database.
func DatabaseName(service string) string { return "voiceai_" + service }

// ServeHTTP serves handler as service name over NATS with the shared
// middleware: request ids, panic recovery, access log, metrics, and the
// caller forwarded by the gateway.
func ServeHTTP(d Deps, name string, router *mux.Router) (micro.Service, http.Handler, error) {
	h := Handler(d, name, router)
	svc, err := natsx.Serve(d.NC, name, Version, h)
	if err != nil {
		return nil, nil, err
	}
	// A process whose every request slot stays taken serves nobody new.
	d.AddReadyCheck(name+"_capacity", svc.Ready)
	return svc, h, nil
}

// Handler wraps a service router in the shared middleware.
func Handler(d Deps, name string, router *mux.Router) http.Handler {
	// Router middleware runs after route matching, so metrics see the route
	// template rather than the raw path.
	router.Use(obs.NewHTTPMetrics(d.Metrics, name).Middleware, httpx.RouteNamer)
	router.NotFoundHandler = httpx.NotFoundHandler()
	router.MethodNotAllowedHandler = httpx.MethodNotAllowedHandler(router)
	// The gateway logs each request at info; behind it, a service's line is
	// debug, so a request is logged once.
	return httpx.WithRequestID(d.Logger, httpx.WithTraceparent(httpx.Recover(httpx.AccessLogAt(slog.LevelDebug, httpx.WithPrincipal(router)))))
}

// Service is a use-case application served over NATS: what each
// service's Start returns.
type Service[A any] struct {
	App      A
	Handler  http.Handler // the HTTP handler served over NATS, for in-process use
	Endpoint micro.Service
}

// Stop drains the endpoint.
func (s *Service[A]) Stop() error { return s.Endpoint.Stop() }

// Serve serves app as service name over NATS (ServeHTTP): handlers'
// methods serve the service's operations of the table, each the one named
// after its operation (api.Serve).
func Serve[A any](d Deps, name string, app A, handlers any) (*Service[A], error) {
	ep, h, err := ServeHTTP(d, name, api.Serve(name, handlers))
	if err != nil {
		return nil, err
	}
	return &Service[A]{App: app, Handler: h, Endpoint: ep}, nil
}
