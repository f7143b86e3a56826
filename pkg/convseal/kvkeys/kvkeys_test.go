package kvkeys_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/convseal/convsealtest"
	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// openBucket opens the bucket on a NATS server of its own, its files in
// dir, JetStream holding at most maxStore bytes (0: the server's default).
func openBucket(t *testing.T, dir string, maxStore int64) (jetstream.JetStream, *kvkeys.Keys) {
	t.Helper()
	js := testenv.JetStreamAt(t, testenv.StartNATSWith(t, embedded.NATSOptions{StoreDir: dir, MaxStore: maxStore}).ClientURL())
	keys, err := kvkeys.Open(context.Background(), js, 1, "deployment-secret")
	if err != nil {
		t.Fatal(err)
	}
	return js, keys
}

func TestBucketKeys(t *testing.T) {
	dir := t.TempDir()
	js, keys := openBucket(t, dir, 0)
	ctx := context.Background()
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

// A replay reads the bucket once: after Warm, keys present at the pass
// are answered without the server, a shredded one stays shredded, and a
// key made after the pass is asked for as usual.
func TestWarmReadsTheBucketOnce(t *testing.T) {
	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	connect := func() (*nats.Conn, *kvkeys.Keys) {
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, _ := jetstream.New(nc)
		keys, err := kvkeys.Open(context.Background(), js, 1, "deployment-secret")
		if err != nil {
			t.Fatal(err)
		}
		return nc, keys
	}
	ctx := context.Background()
	_, writer := connect()
	made := map[string][]byte{}
	for i := range 50 {
		id := fmt.Sprintf("conv_%d", i)
		key, err := writer.Key(ctx, "ws_1", id, true)
		if err != nil {
			t.Fatal(err)
		}
		made[id] = key
	}
	if err := writer.Shred(ctx, "ws_1", "conv_7"); err != nil {
		t.Fatal(err)
	}

	nc, replayer := connect()
	release, err := replayer.Warm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	later, err := writer.Key(ctx, "ws_1", "conv_later", true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := replayer.Key(ctx, "ws_1", "conv_later", false); err != nil || !bytes.Equal(got, later) {
		t.Fatalf("a key made after the pass: %x, %v; want %x", got, err, later)
	}
	nc.Close() // from here the replayer has no server: what it answers comes from the pass
	for id, want := range made {
		got, err := replayer.Key(ctx, "ws_1", id, false)
		switch {
		case id == "conv_7" && !errors.Is(err, convseal.ErrShredded):
			t.Errorf("%s: err = %v, want ErrShredded", id, err)
		case id != "conv_7" && (err != nil || !bytes.Equal(got, want)):
			t.Errorf("%s: %x, %v; want %x", id, got, err, want)
		}
	}
	release()
	if _, err := replayer.Key(ctx, "ws_1", "conv_1", false); err == nil {
		t.Error("after release a key was answered without the server")
	}
}

// BenchmarkReplay opens the keys of 10,000 sealed conversations as a
// replay does: one by one, and after a warm pass of the bucket.
//
//	go test ./pkg/convseal/kvkeys -run - -bench Replay -benchtime 3x
func BenchmarkReplay(b *testing.B) {
	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: b.TempDir(), Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer ns.Shutdown()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	keys, err := kvkeys.Open(ctx, js, 1, "deployment-secret")
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	for i := range n {
		if _, err := keys.Key(ctx, "ws_1", fmt.Sprintf("conv_%d", i), true); err != nil {
			b.Fatal(err)
		}
	}
	replay := func(b *testing.B) {
		for i := range n {
			if _, err := keys.Key(ctx, "ws_1", fmt.Sprintf("conv_%d", i), false); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			replay(b)
		}
	})
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			release, err := keys.Warm(ctx)
			if err != nil {
				b.Fatal(err)
			}
			replay(b)
			release()
		}
	})
}

// A key the bucket has no room left for is apperr.StorageFull (a 503
// storage_full at the edge), not an internal error.
func TestAKeyWithNoRoomLeftIsStorageFull(t *testing.T) {
	_, keys := openBucket(t, t.TempDir(), 256<<10)
	ctx := t.Context()
	var err error
	for i := 0; ; i++ {
		if _, err = keys.Key(ctx, "ws_1", fmt.Sprintf("conv_%d", i), true); err != nil {
			break
		}
		if i == 10_000 {
			t.Fatal("10,000 keys under a 256 KiB limit")
		}
	}
	if !errors.Is(err, apperr.StorageFull) {
		t.Fatalf("a key with no room left: %v; want storage full", err)
	}
}
