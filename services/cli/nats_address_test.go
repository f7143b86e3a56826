package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// events tail finds NATS as a user expects: the flag, else the
// environment, else make run's data directory, else the default.
func TestNATSAddressPrecedence(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nats.url"), []byte("nats://127.0.0.1:40123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VOICEAI_DATA_DIR", dir)
	t.Setenv("VOICEAI_NATS_URL", "")
	if url, _ := natsAddress(""); url != "nats://127.0.0.1:40123" {
		t.Fatalf("data dir: %s", url)
	}
	t.Setenv("VOICEAI_NATS_URL", "nats://env:4222")
	if url, from := natsAddress(""); url != "nats://env:4222" || from != "VOICEAI_NATS_URL" {
		t.Fatalf("env: %s %s", url, from)
	}
	if url, _ := natsAddress("nats://flag:4222"); url != "nats://flag:4222" {
		t.Fatalf("flag: %s", url)
	}
	t.Setenv("VOICEAI_NATS_URL", "")
	t.Setenv("VOICEAI_DATA_DIR", t.TempDir())
	if url, _ := natsAddress(""); url != DefaultNATSURL {
		t.Fatalf("default: %s", url)
	}
}
