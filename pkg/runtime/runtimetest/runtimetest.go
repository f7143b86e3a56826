// Package runtimetest builds a service's dependencies for its tests.
package runtimetest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// Deps are one replica's dependencies on nc and mc (nil: no store), with
// a silent log and metrics of their own, so a test may start a service
// again in the same process.
func Deps(t testing.TB, nc *nats.Conn, mc *mongo.Client) runtime.Deps {
	t.Helper()
	d, err := runtime.NewDeps(nc, mc, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), 1)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// OnEachReadIndex runs test as a subtest for each read index a service's
// listings may read: memory (built from the streams) and store.
func OnEachReadIndex(t *testing.T, test func(t *testing.T, index string)) {
	for _, index := range []string{config.ReadIndexMemory, config.ReadIndexStore} {
		t.Run(index, func(t *testing.T) { test(t, index) })
	}
}

// Restarts returns what starts a service (by start, as Start does) on one
// replica's dependencies on a fresh environment (NATS and the store) with
// the read index given, made anew at each call: a service started after
// another stopped is that replica restarted.
func Restarts[A any](t *testing.T, index string, start func(context.Context, runtime.Deps) (*runtime.Service[A], error)) func() (*runtime.Service[A], func()) {
	env := testenv.New(t)
	conn, mc := env.Conn(t), env.Mongo(t)
	return func() (*runtime.Service[A], func()) {
		d := Deps(t, conn, mc)
		d.ReadIndex = index
		return Start(t, func(ctx context.Context) (*runtime.Service[A], error) { return start(ctx, d) })
	}
}

// Start starts a service by start, on a context of its own, and returns
// it with its stop: the service stops, then its context ends. A restart
// test stops one and starts another on the same stores.
func Start[A any](t testing.TB, start func(context.Context) (*runtime.Service[A], error)) (*runtime.Service[A], func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := start(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return svc, func() { _ = svc.Stop(); cancel() }
}

// Do serves a request to h in-process as p would send it through the
// gateway, and returns the answer's JSON (nil when empty); an answer of
// 300 or more fails the test.
func Do(t testing.TB, h http.Handler, p principal.Principal, method, path, body string) map[string]any {
	t.Helper()
	rec := record(h, p, method, path, body)
	if rec.Code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	var m map[string]any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// DoList is Do of a request whose answer is a JSON array.
func DoList(t testing.TB, h http.Handler, p principal.Principal, method, path string) []any {
	t.Helper()
	rec := record(h, p, method, path, "")
	var l []any
	if rec.Code >= 300 || json.Unmarshal(rec.Body.Bytes(), &l) != nil {
		t.Fatalf("%s %s: %d %s, want a JSON array", method, path, rec.Code, rec.Body)
	}
	return l
}

// Serve serves a request to h in-process as p would send it through the
// gateway, and returns the answer's status and JSON (nil when the body is
// empty or no JSON object): for a test that checks the status itself.
func Serve(h http.Handler, p principal.Principal, method, path, body string) (int, map[string]any) {
	rec := record(h, p, method, path, body)
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	return rec.Code, m
}

func record(h http.Handler, p principal.Principal, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	p.SetHeaders(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
