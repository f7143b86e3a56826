// Package runtimetest builds a service's dependencies for its tests.
package runtimetest

import (
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/runtime"
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
