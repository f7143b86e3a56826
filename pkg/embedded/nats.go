// Package embedded runs the suite's infrastructure in-process: a NATS
// server with JetStream here, and the Mongo-wire-compatible store (FerretDB
// on SQLite) in docstore. They back `make run` and the tests, so the same
// client code talks to the same protocols as in production.
package embedded

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/crypto/bcrypt"
)

// NATSOptions configures an embedded NATS server.
type NATSOptions struct {
	// StoreDir holds JetStream's file store; it survives restarts.
	StoreDir string
	// Host and Port to listen on; Port -1 picks a random free port.
	Host string
	Port int
	// User and Password, when set, are what every client must present
	// (in its URL: nats://user:password@host:port); unset, the server
	// takes any client, as a test's may.
	User, Password string
	// MaxPayload in bytes; 0 keeps the server default.
	MaxPayload int32
	// MaxStore bounds JetStream's file store in bytes; 0 keeps the
	// server's default, 75% of the disk's free space at start.
	MaxStore int64
	// Logger receives the server's warnings and errors (a client it
	// disconnects for a protocol violation, a store that fails), and its
	// notices at debug level; nil logs nothing.
	Logger *slog.Logger
	// WriteFailed, when set, is told when JetStream failed to write a
	// stream or a consumer to disk (no space left, an I/O error):
	// nats-server keeps that error, and refuses the stream's writes,
	// until it restarts.
	WriteFailed func(msg string)
}

// StartNATS starts a JetStream-enabled NATS server and waits until it
// accepts connections.
func StartNATS(o NATSOptions) (*server.Server, error) {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	// What the server would only log, and then never be ready: said here,
	// with its cause, rather than as "not ready after 10s".
	if o.Port > 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
		if err != nil {
			return nil, fmt.Errorf("embedded nats: cannot listen on port %d (VOICEAI_EMBEDDED_NATS_PORT; -1 picks a free one): %w", o.Port, err)
		}
		_ = ln.Close()
	}
	if err := writable(o.StoreDir); err != nil {
		return nil, fmt.Errorf("embedded nats: its store directory %s cannot be written: %w", o.StoreDir, err)
	}
	// The server keeps only a bcrypt hash of the password (it warns of a
	// plaintext one, and checks a client's password against the hash), at
	// the lowest cost: the password is random, 128 bits long.
	password := o.Password
	if o.User != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(o.Password), bcrypt.MinCost)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		password = string(hash)
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
		Username:   o.User,
		Password:   password,

		JetStreamMaxStore: o.MaxStore,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Logger != nil || o.WriteFailed != nil {
		log := o.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		ns.SetLoggerV2(serverLog{log: log.With("component", "nats-server"), writeFailed: o.WriteFailed}, false, false, false)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s")
	}
	return ns, nil
}

// ClientURL is ns's client URL carrying o's credentials, if any.
func (o NATSOptions) ClientURL(ns *server.Server) string {
	u, err := url.Parse(ns.ClientURL())
	if err != nil || o.User == "" {
		return ns.ClientURL()
	}
	u.User = url.UserPassword(o.User, o.Password)
	return u.String()
}

// writable makes dir if need be and checks a file can be written there.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".writable-*")
	if err != nil {
		return err
	}
	_ = f.Close()
	return os.Remove(f.Name())
}

// serverLog is the server's log on slog. Its notices (start-up, JetStream's
// settings, each client's connection) are routine, so they go at debug
// level; its warnings and errors keep theirs.
type serverLog struct {
	log         *slog.Logger
	writeFailed func(msg string)
}

func (l serverLog) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLog) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }

// Errorf also tells writeFailed of a write error the server keeps: its log
// line is the only sign nats-server gives of it ("JetStream stream '…'
// critical write error", "Filestore […] Critical write error").
func (l serverLog) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	if l.writeFailed != nil && strings.Contains(strings.ToLower(msg), "critical write error") {
		l.writeFailed(msg)
	}
}

func (l serverLog) Fatalf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLog) Debugf(string, ...any)          {}
func (l serverLog) Tracef(string, ...any)          {}
