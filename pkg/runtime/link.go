package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/obs"
)

// ErrConnectionLost means the NATS connection was closed for good by
// something other than the process itself: nats.go gives up on a
// connection after some protocol errors from the server (a control line
// too long, for one) instead of reconnecting. Everything built on it must
// be rebuilt on a new connection.
var ErrConnectionLost = errors.New("nats connection closed by the server for good")

// Link is a process's NATS connection as its health sees it: it
// reconnects forever with back-off, counts what happens to it, and tells
// when it is lost for good.
type Link struct {
	NC       *nats.Conn
	lost     chan struct{}
	lostOnce sync.Once
	closing  atomic.Bool
	island   *islandWatch // nil on a Link made around a connection dialled elsewhere
	stop     context.CancelFunc
}

// Lost is closed when the connection is closed for good by anything but
// Close.
func (l *Link) Lost() <-chan struct{} { return l.lost }

// Ready is nil while the connection is up and not on an island (a
// readiness check).
func (l *Link) Ready(context.Context) error {
	if s := l.NC.Status(); s != nats.CONNECTED {
		return fmt.Errorf("not connected: %s", s)
	}
	if l.island != nil {
		return l.island.ready()
	}
	return nil
}

// Alive is nil unless the connection is lost for good (a liveness check:
// a process that cannot rebuild it must be restarted).
func (l *Link) Alive(context.Context) error {
	select {
	case <-l.lost:
		return ErrConnectionLost
	default:
		return nil
	}
}

// Close drains the connection; its closing is not a loss.
func (l *Link) Close() {
	l.closing.Store(true)
	if l.stop != nil {
		l.stop()
	}
	_ = l.NC.Drain()
}

// reconnectDelay is the wait before reconnection attempt n: doubling from
// 50 ms to 2 s, with up to 25% jitter so replicas do not reconnect in step.
func reconnectDelay(attempt int) time.Duration {
	d := min(50*time.Millisecond<<min(attempt, 6), 2*time.Second)
	return d + rand.N(d/4+1)
}

// DialNATS connects to url, retrying with back-off until ctx ends (a
// service may start before its NATS server), and keeps reconnecting
// forever once connected. Disconnections, reconnections and losses are
// logged and counted in voiceai_nats_connection_events_total.
func DialNATS(ctx context.Context, name, url string, logger *slog.Logger, reg prometheus.Registerer, extra ...nats.Option) (*Link, error) {
	events := obs.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voiceai_nats_connection_events_total",
		Help: "What happened to the process's NATS connection: disconnected, reconnected, lost (closed for good by the server), left_island (moved off a server that lost its cluster).",
	}, []string{"event"}))
	for _, e := range []string{"disconnected", "reconnected", "lost", "left_island"} {
		events.WithLabelValues(e) // exported at 0, so increase() sees the first one
	}
	l := &Link{lost: make(chan struct{})}
	l.island = &islandWatch{log: logger, moved: events.WithLabelValues("left_island").Inc}
	opts := []nats.Option{
		nats.ReconnectToServer(l.island.chooseServer),
		nats.Name("voiceai-" + name),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		// A server cut off by a partition or a dead machine sends no reset:
		// only unanswered pings tell. Every second, two missed (2-3 s,
		// within the ~5 s a stream takes to elect a new leader), instead of
		// nats.go's 2 minutes twice. A request lost on a connection given up
		// this way is sent again by the gateway's hedging.
		nats.PingInterval(time.Second),
		nats.MaxPingsOutstanding(2),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil && !l.closing.Load() {
				events.WithLabelValues("disconnected").Inc()
				logger.Warn("nats disconnected", "err", err)
			}
		}),
		// An asynchronous error goes to the log, with the subscription it
		// concerns, not to stderr as nats.go's default does: one the server
		// sent (a protocol violation, a permission) as an error; a slow
		// consumer, or a failed attempt while reconnecting (the disconnect
		// was logged already), as a warning.
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			level, subject := slog.LevelError, ""
			if errors.Is(err, nats.ErrSlowConsumer) || nc.IsReconnecting() {
				level = slog.LevelWarn
			}
			if sub != nil {
				subject = sub.Subject
			}
			logger.Log(context.Background(), level, "nats error", "err", err, "subject", subject)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			events.WithLabelValues("reconnected").Inc()
			logger.Info("nats reconnected", "url", config.Redacted(c.ConnectedUrl()))
		}),
		nats.ClosedHandler(func(c *nats.Conn) {
			if l.closing.Load() {
				return
			}
			l.lostOnce.Do(func() {
				events.WithLabelValues("lost").Inc()
				logger.Error("nats connection lost for good; rebuilding on a new one", "err", c.LastError())
				close(l.lost)
			})
		}),
	}
	opts = append(opts, extra...)
	var nc *nats.Conn
	err := untilReachable(ctx, "nats", url, logger, func() (err error) {
		nc, err = nats.Connect(url, opts...)
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			return refused{fmt.Errorf("NATS refused the login in VOICEAI_NATS_URL (%s): %w; check its user and password", config.Redacted(url), err)}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	l.NC = nc
	var watch context.Context
	watch, l.stop = context.WithCancel(context.Background())
	go l.island.run(watch, nc)
	return l, nil
}

// refused is a failure to reach a server that no wait cures: the server
// refused the process's login.
type refused struct{ error }

// untilReachable calls try until it succeeds, logging each failure and
// waiting reconnectDelay between attempts, or until ctx ends: a process
// may start before the server it needs (what, at url).
func untilReachable(ctx context.Context, what, url string, logger *slog.Logger, try func() error) error {
	for attempt := 0; ; attempt++ {
		err := try()
		if err == nil {
			return nil
		}
		var r refused
		if errors.As(err, &r) {
			return r.error // a wrong login does not heal by waiting: the process stops, saying why
		}
		logger.Warn(what+" not reachable yet", "url", config.Redacted(url), "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("reach %s %s: %w", what, config.Redacted(url), err)
		case <-time.After(reconnectDelay(attempt)):
		}
	}
}
