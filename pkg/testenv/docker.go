package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/modules/mongodb"
	tcnats "github.com/testcontainers/testcontainers-go/modules/nats"
)

// Official images used by the container path (tier 5 tests). The tags are
// the production versions the stack is deployed against.
const (
	natsImage  = "nats:2.12"
	mongoImage = "mongo:7"
)

const (
	// dockerProbeTimeout bounds the check that a Docker engine answers.
	// Without an engine the probe fails fast; the timeout only matters when
	// DOCKER_HOST points at something that never replies.
	dockerProbeTimeout = 10 * time.Second
	// containerStartTimeout bounds pulling and starting one container.
	containerStartTimeout = 5 * time.Minute
)

func useDocker() bool { return os.Getenv("VOICEAI_TEST_DOCKER") == "1" }

// RealMongo reports whether New gives a real MongoDB (the container tier)
// rather than the embedded store, for tests of what only MongoDB does
// (query plans).
func RealMongo() bool { return useDocker() }

// newDocker starts the official NATS (JetStream enabled) and MongoDB
// images with testcontainers-go and terminates them when t ends. When no
// Docker engine answers, t is skipped with the reason; it never fails or
// hangs on a machine without Docker.
func newDocker(t testing.TB) *Env {
	t.Helper()
	requireDocker(t, dockerEngine, dockerProbeTimeout)

	logger := testcontainers.WithLogger(tclog.TestLogger(t))

	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()

	// Start both containers concurrently: image pulls dominate start-up.
	var (
		wg              sync.WaitGroup
		natsURL, mongoU string
		natsErr, mgoErr error
	)
	wg.Go(func() {
		// The module runs the server with "-DV -js": JetStream on, store
		// inside the container (discarded with it).
		c, err := tcnats.Run(ctx, natsImage, logger)
		natsURL, natsErr = serving(t, natsImage, c, err, func() (string, error) { return c.ConnectionString(ctx) })
	})
	wg.Go(func() {
		c, err := mongodb.Run(ctx, mongoImage, logger)
		mongoU, mgoErr = serving(t, mongoImage, c, err, func() (string, error) { return c.ConnectionString(ctx) })
	})
	wg.Wait()
	if err := errors.Join(natsErr, mgoErr); err != nil {
		t.Fatalf("VOICEAI_TEST_DOCKER=1: %v", err)
	}
	return &Env{NATSURL: natsURL, MongoURI: mongoU}
}

// serving is the address of a container's server, once its start (err)
// succeeded; the container is removed when t ends, started or not.
func serving(t testing.TB, image string, c testcontainers.Container, err error, address func() (string, error)) (string, error) {
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		return "", fmt.Errorf("start %s: %w", image, err)
	}
	return address()
}

// requireDocker skips t unless p reports a Docker engine that answers
// within timeout.
func requireDocker(t testing.TB, p *engineProbe, timeout time.Duration) {
	t.Helper()
	if err := p.wait(timeout); err != nil {
		t.Skipf("VOICEAI_TEST_DOCKER=1 but no Docker engine answers: %v", err)
	}
}

// engineProbe runs a health check once per process and lets every caller
// wait for its outcome with its own deadline. The check runs in its own
// goroutine because parts of testcontainers' host discovery take no
// context; a caller that gives up leaves it behind rather than hanging.
type engineProbe struct {
	check func(context.Context) error

	once sync.Once
	done chan struct{}
	err  error
}

func newEngineProbe(check func(context.Context) error) *engineProbe {
	return &engineProbe{check: check, done: make(chan struct{})}
}

// dockerEngine is the process-wide probe of the Docker engine that
// testcontainers would use (DOCKER_HOST, ~/.testcontainers.properties,
// the default sockets, ...).
var dockerEngine = newEngineProbe(pingDocker)

func (p *engineProbe) wait(timeout time.Duration) error {
	p.once.Do(func() {
		go func() {
			defer close(p.done)
			defer func() {
				// testcontainers panics in a few host-discovery paths.
				if r := recover(); r != nil {
					p.err = fmt.Errorf("docker probe panicked: %v", r)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			p.err = p.check(ctx)
		}()
	})
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.err
	case <-timer.C:
		return fmt.Errorf("no answer within %s", timeout)
	}
}

// pingDocker asks the engine for its info, as testcontainers' own
// provider health check does.
func pingDocker(ctx context.Context) error {
	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return err
	}
	// Health closes the provider's client.
	return provider.Health(ctx)
}
