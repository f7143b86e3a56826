package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type sample struct {
	Infra
	Port int `env:"VOICEAI_SAMPLE_PORT" envDefault:"8080"`
}

func (s sample) Validate() error { return s.Infra.Validate() }

func TestLoadDefaults(t *testing.T) {
	c, err := Load[sample]()
	if err != nil {
		t.Fatal(err)
	}
	if c.NATSURL != "nats://127.0.0.1:4222" || c.Port != 8080 || c.StreamReplicas != 1 {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestLoadRejectsBadValues(t *testing.T) {
	t.Setenv("VOICEAI_NATS_URL", "http://x")
	t.Setenv("VOICEAI_LOG_LEVEL", "loud")
	_, err := Load[sample]()
	if err == nil || !strings.Contains(err.Error(), "VOICEAI_NATS_URL") || !strings.Contains(err.Error(), "VOICEAI_LOG_LEVEL") {
		t.Fatalf("want both errors named, got %v", err)
	}
	t.Setenv("VOICEAI_NATS_URL", "nats://x:1")
	t.Setenv("VOICEAI_LOG_LEVEL", "info")
	t.Setenv("VOICEAI_SAMPLE_PORT", "eighty")
	if _, err := Load[sample](); err == nil || !strings.Contains(err.Error(), `VOICEAI_SAMPLE_PORT "eighty": want a whole number`) {
		t.Fatalf("a value that does not parse is named by its variable, got %v", err)
	}
}

type WorkerPart struct {
	Concurrency int `env:"VOICEAI_SAMPLE_CONCURRENCY" envDefault:"1"`
}

func (w WorkerPart) Validate() error {
	if w.Concurrency < 1 {
		return errors.New("VOICEAI_SAMPLE_CONCURRENCY must be at least 1")
	}
	return nil
}

// A configuration of two parts, each with its own rules, and none of its
// own: each part is validated.
func TestEmbeddedPartsAreValidated(t *testing.T) {
	type twoParts struct {
		Infra
		WorkerPart
	}
	t.Setenv("VOICEAI_SAMPLE_CONCURRENCY", "0")
	if _, err := Load[twoParts](); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Fatalf("the worker part's rule: %v", err)
	}
	t.Setenv("VOICEAI_SAMPLE_CONCURRENCY", "2")
	t.Setenv("VOICEAI_STREAM_REPLICAS", "0")
	if _, err := Load[twoParts](); err == nil || !strings.Contains(err.Error(), "VOICEAI_STREAM_REPLICAS") {
		t.Fatalf("the infrastructure's rule: %v", err)
	}
	t.Setenv("VOICEAI_STREAM_REPLICAS", "1")
	if _, err := Load[twoParts](); err != nil {
		t.Fatal(err)
	}
	// A part's Validate shadows the deeper one of Service's Infra: both
	// are still checked.
	type shadowing struct {
		Service
		WorkerPart
	}
	t.Setenv("VOICEAI_SECRET_KEY", strings.Repeat("s", MinSecretLen))
	t.Setenv("VOICEAI_STREAM_REPLICAS", "0")
	if _, err := Load[shadowing](); err == nil || !strings.Contains(err.Error(), "VOICEAI_STREAM_REPLICAS") {
		t.Fatalf("the infrastructure's rule under a shadowing part: %v", err)
	}
}

// A binary that keeps no store reads the shared settings, and runs on
// them without a store.
func TestNoStoreDialsNoStore(t *testing.T) {
	type worker struct {
		NoStore
		WorkerPart
	}
	t.Setenv("VOICEAI_NATS_URL", "nats://nats:4222")
	t.Setenv("VOICEAI_MONGO_URI", "mongodb://mongo:27017")
	c, err := Load[worker]()
	if err != nil {
		t.Fatal(err)
	}
	if infra := c.Infrastructure(); infra.NATSURL != "nats://nats:4222" || infra.MongoURI != "" {
		t.Fatalf("a storeless binary runs on %+v", infra)
	}
	t.Setenv("VOICEAI_STREAM_REPLICAS", "0")
	if _, err := Load[worker](); err == nil || !strings.Contains(err.Error(), "VOICEAI_STREAM_REPLICAS") {
		t.Fatalf("the infrastructure's rule: %v", err)
	}
}

// Every typed value that does not parse is named by its variable, once.
func TestBadValuesNameTheirVariable(t *testing.T) {
	type nested struct {
		Wait  time.Duration `env:"VOICEAI_T_WAIT"`
		Ratio float64       `env:"VOICEAI_T_RATIO"`
	}
	type cfg struct {
		nested
		Again time.Duration `env:"VOICEAI_T_WAIT"`
		On    bool          `env:"VOICEAI_T_ON"`
		Count uint          `env:"VOICEAI_T_COUNT"`
		Name  string        `env:"VOICEAI_T_NAME"`
	}
	for k, v := range map[string]string{"VOICEAI_T_WAIT": "5", "VOICEAI_T_RATIO": "half", "VOICEAI_T_ON": "yes please", "VOICEAI_T_COUNT": "-1", "VOICEAI_T_NAME": "anything"} {
		t.Setenv(k, v)
	}
	_, err := Load[cfg]()
	want := []string{`VOICEAI_T_WAIT "5": want a duration`, `VOICEAI_T_RATIO "half": want a number`, `VOICEAI_T_ON "yes please": want true or false`,
		`VOICEAI_T_COUNT "-1": want a whole number, 0 or more`}
	for _, w := range want {
		if err == nil || strings.Count(err.Error(), w) != 1 {
			t.Fatalf("want %q once in %v", w, err)
		}
	}
	if strings.Contains(err.Error(), "field") {
		t.Fatalf("a Go field name leaked: %v", err)
	}
}

func TestCheckListenAddr(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, ":0": true, "localhost:9464": true, "[::1]:80": true,
		"nonsense": false, ":99999": false, "bad:addr:x": false, "host name:80": false, "": false} {
		if err := CheckListenAddr("VOICEAI_X_ADDR", addr, false); (err == nil) != ok || err != nil && !strings.Contains(err.Error(), "VOICEAI_X_ADDR") {
			t.Errorf("%q: %v", addr, err)
		}
	}
	if CheckListenAddr("VOICEAI_X_ADDR", "off", true) != nil || CheckListenAddr("VOICEAI_X_ADDR", "off", false) == nil {
		t.Error("off is allowed only where the listener is optional")
	}
}

// A deployment secret set shorter than MinSecretLen is refused by name:
// every key derived from it could be guessed from one signed cursor.
func TestAShortSecretIsRefused(t *testing.T) {
	t.Setenv("VOICEAI_SECRET_KEY", "changeme")
	if _, err := Load[Service](); err == nil || !strings.Contains(err.Error(), "VOICEAI_SECRET_KEY has 8 characters: want at least 32") {
		t.Fatalf("a secret of 8 characters: %v", err)
	}
	t.Setenv("VOICEAI_SECRET_KEY", strings.Repeat("k", MinSecretLen))
	if _, err := Load[Service](); err != nil {
		t.Fatalf("a secret of %d characters: %v", MinSecretLen, err)
	}
	if err := CheckSecret(""); err != nil {
		t.Fatalf("no secret is for the binary to refuse or not: %v", err)
	}
}
