package kvkeys_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/convseal/convsealtest"
	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/embedded"
)

func TestBucketKeys(t *testing.T) {
	dir := t.TempDir()
	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	keys, err := kvkeys.Open(ctx, js, 1, "deployment-secret")
	if err != nil {
		t.Fatal(err)
	}
	convsealtest.Keys(t, keys)

	// The key is sealed in the bucket; once shredded its bytes are gone
	// from the bucket's files, not only unlinked.
	key, err := keys.Key(ctx, "ws_9", "conv_9", true)
	if err != nil {
		t.Fatal(err)
	}
	if !inFiles(t, dir, nil) {
		t.Fatal("no files")
	}
	if inFiles(t, dir, key) {
		t.Fatal("the data key is stored in the clear")
	}
	other, err := kvkeys.Open(ctx, js, 1, "another-secret")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Key(ctx, "ws_9", "conv_9", false); err == nil {
		t.Error("the key opened under another deployment secret")
	}
	kv, err := js.KeyValue(ctx, kvkeys.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, "ws_9.conv_9")
	if err != nil {
		t.Fatal(err)
	}
	sealed := entry.Value()
	if !inFiles(t, dir, sealed) {
		t.Fatal("the sealed key is not in the bucket's files: the check below would prove nothing")
	}
	if err := keys.Shred(ctx, "ws_9", "conv_9"); err != nil {
		t.Fatal(err)
	}
	if inFiles(t, dir, sealed) {
		t.Error("the shredded key's sealed bytes are still in the bucket's files")
	}
	if _, err := keys.Key(ctx, "ws_9", "conv_9", false); err != convseal.ErrShredded {
		t.Fatalf("err = %v, want ErrShredded", err)
	}
}

// inFiles reports whether b occurs in a file under dir (nil: whether any
// file is there).
func inFiles(t *testing.T, dir string, b []byte) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(path)
		if b == nil || bytes.Contains(data, b) {
			found = true
		}
		return nil
	})
	return found
}
