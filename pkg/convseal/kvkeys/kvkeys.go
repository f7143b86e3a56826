// Package kvkeys keeps the conversations' transcript keys (convseal.Keys)
// in a JetStream key-value bucket every process of the suite shares: one
// entry per conversation, `<workspace>.<conversation>`, the data key
// sealed under the deployment secret. Unlike an event stream, the bucket
// lets one entry be erased: a shredded key's message is securely deleted
// from the bucket's stream (overwritten, not just unlinked) and replaced
// by a marker saying it was destroyed, so no key is ever made again for a
// deleted conversation.
package kvkeys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/seal"
)

// Bucket is the key-value bucket of the transcript keys.
const Bucket = "conversation_keys"

// Purpose derives the key that seals the data keys from the deployment
// secret (runtime.SubKey).
const Purpose = "conversations/transcript-keys"

// destroyed is the entry of a shredded key.
var destroyed = []byte("destroyed")

// Keys is the bucket.
type Keys struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream
	sealer *seal.Sealer

	// warm holds every sealed entry, read in one pass of the bucket,
	// while a replay opens every conversation's transcript (see Warm).
	mu   sync.RWMutex
	warm map[string][]byte
}

// Warm reads every entry of the bucket in one pass and answers Key from
// it until release is called: a process replaying a million sealed
// conversations reads the bucket's stream once rather than asking for a
// million keys one by one. The entries stay sealed in memory; a key made
// after the pass is asked for as usual, and Shred drops its entry at
// once. Call release when the replay is done.
func (k *Keys) Warm(ctx context.Context) (release func(), err error) {
	w, err := k.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop() }()
	warm := map[string][]byte{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("kvkeys: the bucket's watch ended before its entries were read")
			}
			if e == nil { // every entry present at the start has been read
				k.mu.Lock()
				k.warm = warm
				k.mu.Unlock()
				return func() {
					k.mu.Lock()
					k.warm = nil
					k.mu.Unlock()
				}, nil
			}
			warm[e.Key()] = bytes.Clone(e.Value())
		}
	}
}

// warmEntry is id's sealed entry from the warm pass, if there is one.
func (k *Keys) warmEntry(id string) ([]byte, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	v, ok := k.warm[id]
	return v, ok
}

// Open creates or opens the bucket (file storage, one value per key).
func Open(ctx context.Context, js jetstream.JetStream, replicas int, secret string) (*Keys, error) {
	sealer, err := seal.New(runtime.SubKey(secret, Purpose))
	if err != nil {
		return nil, err
	}
	// The bucket's stream is made here rather than by the client's
	// key-value create, which denies deleting a message: erasing one
	// key's message is the point of this bucket.
	stream, err := eventstore.EnsureConfig(ctx, js, jetstream.StreamConfig{
		Name:              "KV_" + Bucket,
		Description:       "Each conversation's transcript key, sealed under the deployment secret; a deleted conversation's is destroyed.",
		Subjects:          []string{"$KV." + Bucket + ".>"},
		Storage:           jetstream.FileStorage,
		Replicas:          max(replicas, 1),
		MaxMsgsPerSubject: 1,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgSize:        -1,
		MaxConsumers:      -1,
		Discard:           jetstream.DiscardNew,
		AllowRollup:       true,
		AllowDirect:       true,
		Duplicates:        2 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	kv, err := eventstore.OpenKeyValue(ctx, js, Bucket)
	if err != nil {
		return nil, err
	}
	return &Keys{kv: kv, stream: stream, sealer: sealer}, nil
}

func name(workspaceID, conversationID string) string { return workspaceID + "." + conversationID }

// Key implements convseal.Keys.
func (k *Keys) Key(ctx context.Context, workspaceID, conversationID string, create bool) ([]byte, error) {
	id := name(workspaceID, conversationID)
	if v, ok := k.warmEntry(id); ok {
		if bytes.Equal(v, destroyed) {
			return nil, convseal.ErrShredded
		}
		return k.sealer.Open(id, v)
	}
	for {
		e, err := k.kv.Get(ctx, id)
		switch {
		case err == nil && bytes.Equal(e.Value(), destroyed):
			return nil, convseal.ErrShredded
		case err == nil:
			return k.sealer.Open(id, e.Value())
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return nil, eventstore.Classify(err)
		case !create:
			return nil, convseal.ErrNoKey
		}
		key, err := convseal.NewKey()
		if err != nil {
			return nil, err
		}
		sealed, err := k.sealer.Seal(id, string(key))
		if err != nil {
			return nil, err
		}
		if _, err := k.kv.Create(ctx, id, sealed); err == nil {
			return key, nil
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, eventstore.Classify(err) // no answer in time, no room: a 503, not a 500
		}
		// Another process made it first: use theirs.
	}
}

// Shred implements convseal.Keys: the key's message is overwritten in
// the bucket's stream, then the entry says it was destroyed.
func (k *Keys) Shred(ctx context.Context, workspaceID, conversationID string) error {
	id := name(workspaceID, conversationID)
	k.mu.Lock()
	if k.warm != nil {
		k.warm[id] = destroyed
	}
	k.mu.Unlock()
	for range 10 {
		e, err := k.kv.Get(ctx, id)
		switch {
		case err == nil && bytes.Equal(e.Value(), destroyed):
			return nil
		case err == nil:
			if err := k.stream.SecureDeleteMsg(ctx, e.Revision()); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				return err
			}
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return eventstore.Classify(err)
		}
		if _, err := k.kv.Create(ctx, id, destroyed); err == nil {
			return nil
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return eventstore.Classify(err)
		}
		// A key was made meanwhile: destroy it too.
	}
	return fmt.Errorf("shred %s: the key keeps being made again", id)
}
