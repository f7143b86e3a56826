package runtime

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A connection the server drops reconnects by itself, and its
// subscriptions keep receiving; the drop is counted.
func TestLinkReconnectsAfterTheServerDropsIt(t *testing.T) {
	ns := testenv.StartNATSServer(t)
	reg := prometheus.NewRegistry()
	link, err := DialNATS(context.Background(), "linktest", ns.ClientURL(), quietLog(), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	got := make(chan string, 10)
	if _, err := link.NC.Subscribe("ping", func(m *nats.Msg) { got <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	if err := link.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	reconnected := func() float64 { return eventCount(t, reg, "reconnected") }
	if n := testenv.KickClients(t, ns, "voiceai-linktest"); n != 1 {
		t.Fatalf("kicked %d connections, want 1", n)
	}
	testkit.Eventually(t, 10*time.Second, "the reconnection", func() bool { return reconnected() == 1 && link.Ready(context.Background()) == nil })
	if err := link.Alive(context.Background()); err != nil {
		t.Fatalf("a dropped connection is not lost: %v", err)
	}
	other, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	testkit.Eventually(t, 10*time.Second, "the subscription after reconnecting", func() bool {
		_ = other.Publish("ping", []byte("after"))
		select {
		case m := <-got:
			return m == "after"
		case <-time.After(20 * time.Millisecond):
			return false
		}
	})
}

// eventCount reads voiceai_nats_connection_events_total{event}.
func eventCount(t *testing.T, reg *prometheus.Registry, event string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "voiceai_nats_connection_events_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == event {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A connection the server closes for good (a control line beyond its
// limit makes nats.go give up) is not a dead process: Run stops the
// service and starts it again on a new connection, and liveness says so
// in between. The restarted service answers /readyz on the same address.
func TestRunRebuildsAConnectionLostForGood(t *testing.T) {
	ns := testenv.StartNATSServer(t)
	metricsAddr := testkit.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	starts := make(chan Deps, 4)
	stopped := make(chan struct{}, 4)
	done := make(chan error, 1)
	go func() {
		done <- RunContext(ctx, "runtest", config.Infra{NATSURL: ns.ClientURL(), MetricsAddr: metricsAddr, StreamReplicas: 1},
			func(ctx context.Context, d Deps) (func() error, error) {
				starts <- d
				return func() error { stopped <- struct{}{}; return nil }, nil
			}, quietLog())
	}()
	first := <-starts
	if err := first.Probes().Live["nats"](ctx); err != nil {
		t.Fatalf("live before the loss: %v", err)
	}
	// A subject far past the server's 4 KiB control line.
	_ = first.NC.Publish(strings.Repeat("x", 5000), nil)
	_ = first.NC.Flush()
	var second Deps
	select {
	case second = <-starts:
	case <-time.After(10 * time.Second):
		t.Fatal("the service was not started again after its connection was lost")
	}
	<-stopped
	if !first.NC.IsClosed() || first.Probes().Live["nats"](ctx) == nil {
		t.Fatal("the first connection should be closed and reported dead")
	}
	if second.NC == first.NC {
		t.Fatal("the service was started again on the lost connection")
	}
	testkit.Eventually(t, 10*time.Second, "the new connection ready", func() bool { return second.Probes().Ready["nats"](ctx) == nil })
	testkit.Eventually(t, 10*time.Second, "/readyz of the restarted service", func() bool { return Probe(ctx, metricsAddr) == nil })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after shutdown: %v", err)
	}
}

// While the server is down the connection is not ready (but alive: it
// will come back); when a server answers on the same address again it is
// ready without anyone's help.
func TestLinkIsNotReadyWhileTheServerIsDown(t *testing.T) {
	dir := t.TempDir()
	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	port := ns.Addr().(*net.TCPAddr).Port
	link, err := DialNATS(context.Background(), "downtest", ns.ClientURL(), quietLog(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	ns.Shutdown()
	ns.WaitForShutdown()
	testkit.Eventually(t, 10*time.Second, "not ready while the server is down", func() bool { return link.Ready(context.Background()) != nil })
	if err := link.Alive(context.Background()); err != nil {
		t.Fatalf("a connection that is reconnecting is alive: %v", err)
	}
	again, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Shutdown(); again.WaitForShutdown() })
	testkit.Eventually(t, 10*time.Second, "ready once the server is back", func() bool { return link.Ready(context.Background()) == nil })
}

// A login NATS refuses stops the dial at once, saying so and where to
// look, with the password hidden: waiting cures a server not up yet, not
// a wrong password (it was retried for good, at WARN).
func TestDialStopsAtARefusedLogin(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Username: "voiceai", Password: "right-password", NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)
	url := strings.Replace(ns.ClientURL(), "nats://", "nats://voiceai:wrong-password@", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a retry loop would run this out
	defer cancel()
	_, err = DialNATS(ctx, "authtest", url, quietLog(), prometheus.NewRegistry())
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "NATS refused the login in VOICEAI_NATS_URL") || strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("dial with a wrong password: %v (waited out: %v)", err, ctx.Err())
	}
}
