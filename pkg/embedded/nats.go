// Package embedded runs the suite's infrastructure in-process: a NATS
// server with JetStream here, and the Mongo-wire-compatible store (FerretDB
// on SQLite) in docstore. They back `make run` and the tests, so the same
// client code talks to the same protocols as in production.
package embedded

import (
	"fmt"
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
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s")
	}
	return ns, nil
}
