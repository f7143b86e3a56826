package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// serveProbes serves p's /readyz on a random loopback port and returns the
// address as a service would configure it (every interface).
func serveProbes(t *testing.T, p obs.Probes) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", p.ReadyHandler())
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return "0.0.0.0:" + port
}

func TestProbeAsksTheReplicasReadiness(t *testing.T) {
	var ready error = errors.New("starting")
	addr := serveProbes(t, obs.Probes{Ready: map[string]obs.Check{
		"started": func(context.Context) error { return ready },
	}})
	err := Probe(context.Background(), addr)
	if err == nil || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("probe of a starting replica = %v, want not ready naming the failing check", err)
	}
	ready = nil
	if err := Probe(context.Background(), addr); err != nil {
		t.Fatalf("probe of a ready replica = %v", err)
	}
}

func TestProbeWithoutAnEndpointSaysWhy(t *testing.T) {
	for _, addr := range []string{"", obs.MetricsOff} {
		if err := Probe(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "VOICEAI_METRICS_ADDR") {
			t.Errorf("Probe(%q) = %v, want an error naming VOICEAI_METRICS_ADDR", addr, err)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	if err := Probe(context.Background(), addr); err == nil {
		t.Fatal("probe of a replica that is not running succeeded")
	}
}

// An internal endpoint address that passes the syntax check but cannot be
// listened on (another process has it) stops the service at start, naming
// the variable, before it dials anything: it never runs without /readyz.
func TestRunRefusesAMetricsAddressItCannotListenOn(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// No NATS server answers there: dialling would retry until ctx ends.
	infra := config.Infra{NATSURL: "nats://127.0.0.1:1", MetricsAddr: addr, StreamReplicas: 1}
	err = RunContext(ctx, "runtest", infra, func(context.Context, Deps) (func() error, error) {
		t.Error("the service was started")
		return func() error { return nil }, nil
	}, quietLog())
	if ctx.Err() != nil {
		t.Fatal("Run waited instead of refusing the address")
	}
	if err == nil || !strings.Contains(err.Error(), "VOICEAI_METRICS_ADDR") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Run with %s taken = %v, want an error naming VOICEAI_METRICS_ADDR and the address", addr, err)
	}
}

// While the first NATS connection is still being retried, the internal
// endpoint already answers: alive, not ready, saying what it waits for.
func TestProbesAnswerWhileTheFirstConnectionIsRetried(t *testing.T) {
	addr := testkit.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// No NATS server answers there: dialling retries until ctx ends.
		infra := config.Infra{NATSURL: "nats://127.0.0.1:1", MetricsAddr: addr, MongoURI: "mongodb://127.0.0.1:1", StreamReplicas: 1}
		done <- RunContext(ctx, "runtest", infra, func(context.Context, Deps) (func() error, error) {
			t.Error("the service was started without its connections")
			return func() error { return nil }, nil
		}, quietLog())
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testkit.Eventually(t, 10*time.Second, "the internal endpoint answers", func() bool { code, _ := get("/healthz"); return code == http.StatusOK })
	code, body := get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"nats":"connecting"`) || !strings.Contains(body, `"store":"connecting"`) ||
		!strings.Contains(body, `"started":"starting"`) {
		t.Fatalf("/readyz while dialling: %d %s", code, body)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Run ended without an error, though it never connected")
	}
}

// A store that does not answer yet is waited for, as NATS is: the
// process stays alive and not ready, saying so, rather than exiting after
// one attempt (a service started before its MongoDB would have been
// restarted in a loop, never showing why on /readyz).
func TestProbesAnswerWhileTheStoreIsRetried(t *testing.T) {
	addr := testkit.FreeAddr(t)
	var logs testkit.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		infra := config.Infra{NATSURL: testenv.StartNATS(t), MetricsAddr: addr, MongoURI: "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100", StreamReplicas: 1}
		done <- RunContext(ctx, "runtest", infra, func(context.Context, Deps) (func() error, error) {
			t.Error("the service was started without its store")
			return func() error { return nil }, nil
		}, slog.New(slog.NewTextHandler(&logs, nil)))
	}()
	// A third attempt: the first failures did not end the process.
	testkit.Eventually(t, 20*time.Second, "a third attempt to reach the store", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run ended (%v) while the store was only unreachable", err)
		default:
		}
		return strings.Contains(logs.String(), `msg="mongo not reachable yet"`) && strings.Contains(logs.String(), "attempt=3")
	})
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"store":"connecting"`) {
		t.Fatalf("/readyz while the store is retried: %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "reach mongo") {
		t.Fatalf("Run ended with %v, want the store it never reached", err)
	}
}

// A check a service adds is part of the process's readiness, whichever
// copy of its Deps it was added through.
func TestAddedReadyChecksAreTheProcessReadiness(t *testing.T) {
	nc, err := nats.Connect(testenv.StartNATS(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	d, err := NewDeps(nc, nil, slog.Default(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	copied := d
	copied.AddReadyCheck("api_keys", obs.NotYet("loading"))
	check, ok := d.Probes().Ready["api_keys"]
	if !ok || check(context.Background()) == nil {
		t.Fatalf("the check added through a copy is not in the process's probes: %v", d.Probes().Ready)
	}
}
