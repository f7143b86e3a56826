// Package embedded runs the suite's infrastructure in-process: a NATS
// server with JetStream here, and the Mongo-wire-compatible store (FerretDB
// on SQLite) in docstore. They back `make run` and the tests, so the same
// client code talks to the same protocols as in production.
package embedded

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATSOptions configures an embedded NATS server.
type NATSOptions struct {
	// StoreDir holds JetStream's file store; it survives restarts.
	StoreDir string
	// Host and Port to listen on; Port -1 picks a random free port.
	Host string
	Port int
	// MaxPayload in bytes; 0 keeps the server default.
	MaxPayload int32
	// Logger receives the server's warnings and errors (a client it
	// disconnects for a protocol violation, a store that fails), and its
	// notices at debug level; nil logs nothing.
	Logger *slog.Logger
}

// StartNATS starts a JetStream-enabled NATS server and waits until it
// accepts connections.
func StartNATS(o NATSOptions) (*server.Server, error) {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	opts := &server.Options{
		ServerName: "voiceai-embedded",
		Host:       o.Host,
		Port:       o.Port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: o.MaxPayload,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Logger != nil {
		ns.SetLoggerV2(serverLog{o.Logger.With("component", "nats-server")}, false, false, false)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s")
	}
	return ns, nil
}

// serverLog is the server's log on slog. Its notices (start-up, JetStream's
// settings, each client's connection) are routine, so they go at debug
// level; its warnings and errors keep theirs.
type serverLog struct{ log *slog.Logger }

func (l serverLog) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLog) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l serverLog) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLog) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLog) Debugf(string, ...any)           {}
func (l serverLog) Tracef(string, ...any)           {}
