// Package config reads a service's typed configuration from VOICEAI_*
// environment variables (with defaults) and validates it at start-up, so a
// misconfigured process fails fast with a clear message.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"

	"github.com/caarlos0/env/v11"
)

// Validator is implemented by configurations with cross-field rules.
type Validator interface{ Validate() error }

// Load parses the environment into a T and validates it.
func Load[T any]() (T, error) {
	var c T
	if err := checkValues(reflect.TypeFor[T]()); err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	if err := env.Parse(&c); err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	if err := validate(&c); err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// validate checks each embedded part of c that has a Validate, then c's
// own Validate if it has one. Every part is checked whatever Go promotes:
// with two parts a configuration's Validate is ambiguous (it has none),
// and a part's Validate shadows a deeper one's.
func validate(c any) error {
	if rv := reflect.ValueOf(c).Elem(); rv.Kind() == reflect.Struct {
		for i := range rv.NumField() {
			if f := rv.Type().Field(i); !f.Anonymous || !f.IsExported() {
				continue
			}
			if err := validate(rv.Field(i).Addr().Interface()); err != nil {
				return err
			}
		}
	}
	if v, ok := c.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// Infra is what every service needs to reach the bus and its store.
type Infra struct {
	NATSURL string `env:"VOICEAI_NATS_URL" envDefault:"nats://127.0.0.1:4222"`
	// NATSPreferFirst connects to the servers in the order NATSURL lists
	// them (the node nearest the process first) rather than to a random
	// one, which spreads processes across the cluster.
	NATSPreferFirst bool   `env:"VOICEAI_NATS_PREFER_FIRST" envDefault:"false"`
	MongoURI        string `env:"VOICEAI_MONGO_URI" envDefault:"mongodb://127.0.0.1:27017"`
	LogLevel        string `env:"VOICEAI_LOG_LEVEL" envDefault:"info"`
	MetricsAddr     string `env:"VOICEAI_METRICS_ADDR" envDefault:"127.0.0.1:9464"`
	// Replicas of each JetStream stream: 1 in development, 3 in production.
	StreamReplicas int `env:"VOICEAI_STREAM_REPLICAS" envDefault:"1"`
	// ReadIndex is what listings read: "store" (MongoDB queries on its
	// indexes) or "memory" (an ordered index each replica keeps from the
	// stream; for stores that cannot index, such as the embedded one).
	ReadIndex string `env:"VOICEAI_READ_INDEX" envDefault:"store"`
}

// Service is what a service binary that needs nothing of its own reads:
// the infrastructure and the deployment secret its cursors and sealing
// keys derive from.
type Service struct {
	Infra
	SecretKey string `env:"VOICEAI_SECRET_KEY,required,notEmpty"`
}

// Validate checks the deployment secret.
func (c Service) Validate() error { return CheckSecret(c.SecretKey) }

// MinSecretLen is the shortest deployment secret taken: sub-keys are
// hashes of it (runtime.SubKey), so a short one is guessed offline from
// one signed cursor.
const MinSecretLen = 32

// CheckSecret refuses a VOICEAI_SECRET_KEY set shorter than MinSecretLen
// (unset, it is nil: who needs one says so).
func CheckSecret(secret string) error {
	if n := len(secret); n > 0 && n < MinSecretLen {
		return fmt.Errorf("VOICEAI_SECRET_KEY has %d characters: want at least %d (openssl rand -hex 32 makes one)", n, MinSecretLen)
	}
	return nil
}

// Read indexes (VOICEAI_READ_INDEX).
const (
	ReadIndexStore  = "store"
	ReadIndexMemory = "memory"
)

// Infrastructure is c itself: what runtime.Main runs a binary on (a
// configuration that embeds Infra has it too).
func (c Infra) Infrastructure() Infra { return c }

// WithoutStore is c for a binary that keeps no store: no MongoURI, so
// nothing dials one.
func (c Infra) WithoutStore() Infra {
	c.MongoURI = ""
	return c
}

// NoStore is the infrastructure of a binary that keeps no store (the
// gateway, the workers that read and write streams only): embedded in
// its configuration in place of Infra, nothing dials VOICEAI_MONGO_URI.
type NoStore struct{ Infra }

// Infrastructure is the embedded Infra without its store.
func (c NoStore) Infrastructure() Infra { return c.Infra.WithoutStore() }

// Validate checks the shared settings.
func (c Infra) Validate() error {
	var errs []error
	if !strings.HasPrefix(c.NATSURL, "nats://") && !strings.HasPrefix(c.NATSURL, "tls://") && !strings.HasPrefix(c.NATSURL, "ws") {
		errs = append(errs, fmt.Errorf("VOICEAI_NATS_URL %q: want nats://host:port", Redacted(c.NATSURL)))
	}
	if !strings.HasPrefix(c.MongoURI, "mongodb://") && !strings.HasPrefix(c.MongoURI, "mongodb+srv://") {
		errs = append(errs, fmt.Errorf("VOICEAI_MONGO_URI %q: want mongodb://…", Redacted(c.MongoURI)))
	}
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if err := CheckListenAddr("VOICEAI_METRICS_ADDR", c.MetricsAddr, true); err != nil {
		errs = append(errs, err)
	}
	if c.ReadIndex != ReadIndexStore && c.ReadIndex != ReadIndexMemory {
		errs = append(errs, fmt.Errorf("VOICEAI_READ_INDEX %q: want store or memory", c.ReadIndex))
	}
	if c.StreamReplicas != 1 && c.StreamReplicas != 3 && c.StreamReplicas != 5 {
		errs = append(errs, fmt.Errorf("VOICEAI_STREAM_REPLICAS %d: want 1, 3 or 5", c.StreamReplicas))
	}
	return errors.Join(errs...)
}

// ParseLogLevel maps debug|info|warn|error to a slog level.
func ParseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("VOICEAI_LOG_LEVEL %q: want debug, info, warn or error", s)
	}
	return l, nil
}
