package testenv

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestDockerEnvServesJetStreamAndMongo runs the container path itself. It
// needs VOICEAI_TEST_DOCKER=1 and skips, saying why, without a Docker engine.
func TestDockerEnvServesJetStreamAndMongo(t *testing.T) {
	if !useDocker() {
		t.Skip("container path is opt-in: set VOICEAI_TEST_DOCKER=1")
	}
	env := newDocker(t)
	if !strings.HasPrefix(env.NATSURL, "nats://") || !strings.HasPrefix(env.MongoURI, "mongodb://") {
		t.Fatalf("unexpected URLs: nats=%q mongo=%q", env.NATSURL, env.MongoURI)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	js, err := jetstream.New(env.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe.>"}}); err != nil {
		t.Fatalf("JetStream not enabled in %s: %v", natsImage, err)
	}
	ack, err := js.Publish(ctx, "probe.a", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Stream != "PROBE" || ack.Sequence != 1 {
		t.Fatalf("ack = %+v, want stream PROBE seq 1", ack)
	}
	storesAndReadsBack(t, env)
}

// skipRecorder stands in for a test so the skip itself can be asserted.
type skipRecorder struct {
	testing.TB
	skipped string
	failed  string
}

func (r *skipRecorder) Helper() {}

func (r *skipRecorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *skipRecorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runRequireDocker calls requireDocker the way a test goroutine would and
// returns what it recorded, failing t if it does not return in time.
func runRequireDocker(t *testing.T, p *engineProbe, timeout time.Duration) *skipRecorder {
	t.Helper()
	rec := &skipRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		requireDocker(rec, p, timeout)
	}()
	select {
	case <-done:
	case <-time.After(timeout + 5*time.Second):
		t.Fatal("requireDocker did not return")
	}
	if rec.failed != "" {
		t.Fatalf("requireDocker failed the test: %s", rec.failed)
	}
	return rec
}

func TestDockerProbeSkipsWhenEngineHangs(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	p := newEngineProbe(func(ctx context.Context) error { <-block; return nil })

	start := time.Now()
	rec := runRequireDocker(t, p, 50*time.Millisecond)
	if !strings.HasPrefix(rec.skipped, "VOICEAI_TEST_DOCKER=1 but no Docker engine answers: no answer within") {
		t.Fatalf("skip message = %q", rec.skipped)
	}
	if d := time.Since(start); d > 30*time.Second { // the engine never answers: only the probe's limit ends it
		t.Fatalf("took %s to give up", d)
	}
}

func TestDockerProbeSkipsOnEngineError(t *testing.T) {
	calls := 0
	p := newEngineProbe(func(ctx context.Context) error {
		calls++
		return errors.New("Cannot connect to the Docker daemon")
	})
	for range 2 {
		rec := runRequireDocker(t, p, time.Second)
		if want := "VOICEAI_TEST_DOCKER=1 but no Docker engine answers: Cannot connect to the Docker daemon"; rec.skipped != want {
			t.Fatalf("skip message = %q, want %q", rec.skipped, want)
		}
	}
	if calls != 1 {
		t.Fatalf("probe ran %d times, want once per process", calls)
	}
}

func TestDockerProbeSkipsOnPanic(t *testing.T) {
	p := newEngineProbe(func(ctx context.Context) error { panic("rootless Docker not found") })
	rec := runRequireDocker(t, p, time.Second)
	if !strings.Contains(rec.skipped, "no Docker engine answers: docker probe panicked: rootless Docker not found") {
		t.Fatalf("skip message = %q", rec.skipped)
	}
}

func TestDockerProbePassesWhenEngineAnswers(t *testing.T) {
	p := newEngineProbe(func(ctx context.Context) error { return nil })
	if rec := runRequireDocker(t, p, time.Second); rec.skipped != "" {
		t.Fatalf("skipped although the engine answered: %s", rec.skipped)
	}
}
