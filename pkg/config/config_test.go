package config

import (
	"strings"
	"testing"
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
	if _, err := Load[sample](); err == nil {
		t.Fatal("want a parse error for a non-integer port")
	}
}
