// Package testenv gives tests a real NATS JetStream server and a real
// Mongo-wire store: embedded by default (nats-server in-process, FerretDB
// on SQLite), or official containers when VOICEAI_TEST_DOCKER=1. It is
// infrastructure; the pure helpers (Eventually, WantKind, ...) are
// package testkit's, so a test that needs only them links none of it.
package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/voiceai-platform/voiceai/pkg/embedded"
)

// Env is the infrastructure one test runs against.
type Env struct {
	NATSURL  string
	MongoURI string
}

// New starts NATS and the store for t and stops them when t ends.
func New(t testing.TB) *Env {
	t.Helper()
	if useDocker() {
		return newDocker(t)
	}
	return &Env{NATSURL: StartNATS(t), MongoURI: StartMongo(t)}
}

// StartNATS starts an embedded JetStream server with its store in a
// temporary directory and returns its client URL.
func StartNATS(t testing.TB) string {
	t.Helper()
	return StartNATSServer(t).ClientURL()
}

// StartNATSServer is StartNATS returning the server itself, for tests
// that act on it (kick clients, inspect connections).
func StartNATSServer(t testing.TB) *server.Server {
	t.Helper()
	return startNATSServer(t, t.TempDir(), -1)
}

func startNATSServer(t testing.TB, storeDir string, port int) *server.Server {
	t.Helper()
	return StartNATSWith(t, embedded.NATSOptions{StoreDir: storeDir, Port: port})
}

// StartNATSWith is StartNATSServer with the server's options (a storage
// limit, say); its store is in a temporary directory unless o names one,
// and its port random unless o names one.
func StartNATSWith(t testing.TB, o embedded.NATSOptions) *server.Server {
	t.Helper()
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	if o.Port == 0 {
		o.Port = -1
	}
	ns, err := embedded.StartNATS(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// StopNATSServer shuts ns down, as a crash of the server would, and
// returns how to start it again on the same address with the same
// JetStream store.
func StopNATSServer(t testing.TB, ns *server.Server) (restart func() *server.Server) {
	t.Helper()
	// The server keeps its streams in <store dir>/jetstream.
	storeDir := filepath.Dir(ns.StoreDir())
	port := ns.Addr().(*net.TCPAddr).Port
	ns.Shutdown()
	ns.WaitForShutdown()
	return func() *server.Server { return startNATSServer(t, storeDir, port) }
}

// KickClients makes the server drop every client connection whose name
// is name, as a network failure would; it returns how many it dropped.
// The clients are expected to reconnect by themselves.
func KickClients(t testing.TB, ns *server.Server, name string) int {
	t.Helper()
	conns, err := ns.Connz(&server.ConnzOptions{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range conns.Conns {
		if c.Name == name {
			if err := ns.DisconnectClientByID(c.Cid); err != nil {
				t.Fatalf("kick %s (cid %d): %v", name, c.Cid, err)
			}
			n++
		}
	}
	return n
}

// StartMongo starts the embedded store (FerretDB on SQLite) as a process
// of its own, with its files in a temporary directory, and returns its
// connection URI; the process ends with t, or with this test process.
func StartMongo(t testing.TB) string {
	t.Helper()
	uri, stop, _, err := StoreProcess(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return uri
}

// StoreProcess starts the embedded store as a process of its own with its
// files in dir, returning its URI, how to stop it, and why it stopped by
// itself (nil while it runs, or once stopped); it stops with this test
// process too. A process rather than in-process: built once without the
// race detector (see Binaries), it keeps FerretDB and SQLite out of every
// race-enabled test binary (a large share of a cold `make test`'s
// compile) and runs at full speed beside them.
func StoreProcess(dir string) (uri string, stop func(), stopped func() error, err error) {
	bins, err := Binaries(storeBinary)
	if err != nil {
		return "", nil, nil, err
	}
	cmd := exec.Command(filepath.Join(bins, "voiceai-store"), "-stdin-lifeline", dir)
	cmd.Stderr = os.Stderr
	// The store stops when this pipe closes: at stop, or when the test
	// process dies without calling it.
	lifeline, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = lifeline.Close()
		_ = cmd.Wait()
		return "", nil, nil, fmt.Errorf("the store printed no URI: %w", err)
	}
	// Waited for once the URI is read: Wait closes the output pipe.
	var stopping atomic.Bool
	exited := make(chan struct{})
	var exit error
	go func() {
		exit = cmd.Wait()
		close(exited)
	}()
	stop = func() {
		stopping.Store(true)
		_ = lifeline.Close()
		<-exited
	}
	stopped = func() error {
		select {
		case <-exited:
			if !stopping.Load() {
				return fmt.Errorf("the store process (pid %d) exited: %v", cmd.Process.Pid, exit)
			}
		default:
		}
		return nil
	}
	return strings.TrimSpace(line), stop, stopped, nil
}

// storeBinary is the embedded store's command.
const storeBinary = "./pkg/embedded/docstore/voiceai-store"

// Conn connects to the environment's NATS server; closed when t ends.
func (e *Env) Conn(t testing.TB) *nats.Conn { return ConnAt(t, e.NATSURL) }

// ConnAt connects to the NATS server at url, until the test ends.
func ConnAt(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStreamAt connects to the NATS server at url and opens JetStream on
// that connection; closed when t ends.
func JetStreamAt(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(ConnAt(t, url))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// StreamsAt is JetStream on a fresh embedded server with the streams
// ensure creates: a service's EnsureStreams, at one replica.
func StreamsAt(t testing.TB, ensure func(context.Context, jetstream.JetStream, int) error) jetstream.JetStream {
	t.Helper()
	js := JetStreamAt(t, StartNATS(t))
	if err := ensure(context.Background(), js, 1); err != nil {
		t.Fatal(err)
	}
	return js
}

// Mongo connects a driver client to the environment's store; disconnected
// when t ends.
func (e *Env) Mongo(t testing.TB) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(e.MongoURI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// OnFreshDatabases is a conformance suite's factory for an implementation
// kept in the store: each call builds one with build on a database of its
// own (prefix_1, prefix_2, …) of a store started for t.
func OnFreshDatabases[T any](t *testing.T, prefix string, build func(context.Context, *mongo.Database) (T, error)) func(*testing.T) T {
	client := New(t).Mongo(t)
	var n atomic.Int64
	return func(t *testing.T) T {
		t.Helper()
		v, err := build(context.Background(), client.Database(fmt.Sprintf("%s_%d", prefix, n.Add(1))))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
