// Package convsealtest is the conformance test of convseal.Keys stores.
package convsealtest

import (
	"context"
	"errors"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
)

// Keys checks what every convseal.Keys must do.
func Keys(t *testing.T, keys convseal.Keys) {
	t.Helper()
	ctx := context.Background()
	if _, err := keys.Key(ctx, "ws_1", "conv_none", false); !errors.Is(err, convseal.ErrNoKey) {
		t.Fatalf("no key, no create: err = %v, want ErrNoKey", err)
	}
	k1, err := keys.Key(ctx, "ws_1", "conv_1", true)
	if err != nil || len(k1) != convseal.KeySize {
		t.Fatalf("create: %x, %v", k1, err)
	}
	again, err := keys.Key(ctx, "ws_1", "conv_1", true)
	if err != nil || string(again) != string(k1) {
		t.Fatalf("the same conversation's key changed: %x, %v", again, err)
	}
	other, _ := keys.Key(ctx, "ws_2", "conv_1", true)
	if string(other) == string(k1) {
		t.Fatal("two workspaces' conversations share a key")
	}
	if err := keys.Shred(ctx, "ws_1", "conv_1"); err != nil {
		t.Fatal(err)
	}
	for _, create := range []bool{false, true} {
		if _, err := keys.Key(ctx, "ws_1", "conv_1", create); !errors.Is(err, convseal.ErrShredded) {
			t.Errorf("after shred (create %v): err = %v, want ErrShredded", create, err)
		}
	}
	if err := keys.Shred(ctx, "ws_1", "conv_1"); err != nil {
		t.Errorf("shredding twice: %v", err)
	}
	if err := keys.Shred(ctx, "ws_1", "conv_never"); err != nil {
		t.Errorf("shredding a conversation without a key: %v", err)
	}
	if _, err := keys.Key(ctx, "ws_1", "conv_never", true); !errors.Is(err, convseal.ErrShredded) {
		t.Errorf("a key made after the shred: err = %v, want ErrShredded", err)
	}
	if k, err := keys.Key(ctx, "ws_2", "conv_1", false); err != nil || string(k) != string(other) {
		t.Errorf("another workspace's key was touched: %v", err)
	}
}
