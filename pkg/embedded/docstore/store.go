// Package docstore is the embedded document store: FerretDB speaking the
// MongoDB wire protocol, on SQLite files in a directory. `make run` runs
// it in-process; tests run it as a process of its own (voiceai-store, see
// pkg/testenv), so no race-enabled test binary links FerretDB and SQLite.
package docstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// newMu serialises ferretdb.New, which writes a process-wide variable
// (version.Get().Package): two stores started at once would race.
var newMu sync.Mutex

// Store is an in-process FerretDB speaking the MongoDB wire protocol,
// storing its data in SQLite files under a directory.
type Store struct {
	URI    string
	cancel context.CancelFunc
	done   chan struct{}
	// ended is why FerretDB stopped while it was not asked to.
	ended atomic.Pointer[error]
}

// Start starts FerretDB on a random loopback port with its SQLite files
// in dir, and returns once it listens.
func Start(dir string) (*Store, error) { return StartAt(dir, "127.0.0.1:0") }

// StartAt is Start listening on addr (host:port; port 0 picks a free one).
func StartAt(dir, addr string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// FerretDB logs every command it does not know (the driver's
	// endSessions) at warning level; only its errors matter to us.
	//
	// A multi-row insert keeps a statement journal so it can undo itself
	// on a duplicate _id; in memory rather than a temporary file, the
	// projector's batched inserts leave more CPU to requests (creates
	// through the gateway ~9% faster on two cores).
	newMu.Lock()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: addr},
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/?_pragma=temp_store(memory)",
		Logger:    slog.New(lazyAttrs{inner: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})}),
	})
	newMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Store{cancel: cancel, done: make(chan struct{})}
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		keepIDPathsIndexed(ctx, abs, slog.Default())
	}()
	go func() {
		defer close(m.done)
		err := f.Run(ctx)
		if ctx.Err() == nil {
			if err == nil {
				err = errors.New("FerretDB stopped serving")
			}
			err = fmt.Errorf("embedded store stopped by itself: %w", err)
			m.ended.Store(&err)
			slog.Error("embedded store stopped; the platform cannot read or write its collections until it restarts", "err", err)
		}
		<-indexed
	}()
	// MongoDBURI blocks until the listener is bound.
	m.URI = f.MongoDBURI()
	return m, nil
}

// Close stops FerretDB and waits for it to release its files.
func (m *Store) Close() {
	m.cancel()
	<-m.done
}

// Stopped is why the store stopped by itself (nil while it serves, or
// once it was closed): a process whose store is gone must say it is not
// live, for it cannot heal without a restart.
func (m *Store) Stopped() error {
	if err := m.ended.Load(); err != nil {
		return *err
	}
	return nil
}

// Run is Start for what takes a store as a function of its directory: the
// store's URI, how to stop it, and why it stopped by itself.
func Run(dir string) (uri string, stop func(), stopped func() error, err error) {
	m, err := Start(dir)
	if err != nil {
		return "", nil, nil, err
	}
	return m.URI, m.Close, m.Stopped, nil
}

// Serve runs a store in dir until ctx ends, writing its URI and a newline
// to uri once it listens: the store as a process of its own, for services
// run separately on one machine without a MongoDB. Should the store stop
// by itself, Serve returns why, so that the process exits and its
// supervisor starts it again.
func Serve(ctx context.Context, dir string, uri io.Writer) error {
	return ServeAt(ctx, dir, "127.0.0.1:0", uri)
}

// ServeAt is Serve listening on addr (host:port; port 0 picks a free
// one): a fixed address keeps the URI the services were given across the
// store's restarts.
func ServeAt(ctx context.Context, dir, addr string, uri io.Writer) error {
	m, err := StartAt(dir, addr)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := fmt.Fprintln(uri, m.URI); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-m.done:
		return m.Stopped()
	}
}
