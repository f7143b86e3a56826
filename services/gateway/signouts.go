package gateway

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// SignOutBucket is the key-value bucket of console sessions signed out
// before their expiry, keyed by session id: what lets every gateway
// replica refuse a cookie that was signed out on another. An entry is
// kept as long as a session can live (sessionTTL), after which the cookie
// it names is refused as expired anyway. File storage: a NATS restart
// must not bring signed-out sessions back.
const SignOutBucket = "gateway_console_signouts"

// signOutCheckTimeout bounds how long a console request waits for the
// bucket's answer before it is refused as unavailable.
const signOutCheckTimeout = 2 * time.Second

// signOuts is the shared list of signed-out sessions.
type signOuts interface {
	// End records that session id is over, for good.
	End(ctx context.Context, id string, expires time.Time) error
	// Ended reports whether session id was signed out.
	Ended(ctx context.Context, id string) (bool, error)
}

// kvSignOuts keeps the list in a JetStream key-value bucket every
// replica reads.
type kvSignOuts struct{ kv jetstream.KeyValue }

func newKVSignOuts(ctx context.Context, js jetstream.JetStream, replicas int) (*kvSignOuts, error) {
	kv, err := eventstore.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      SignOutBucket,
		Description: "Console sessions signed out before their expiry (the gateway's).",
		TTL:         sessionTTL + time.Minute, // the longest a cookie lives, and clock skew
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		History:     1,
	})
	if err != nil {
		return nil, err
	}
	return &kvSignOuts{kv: kv}, nil
}

func (s *kvSignOuts) End(ctx context.Context, id string, expires time.Time) error {
	_, err := s.kv.Put(ctx, id, []byte(strconv.FormatInt(expires.Unix(), 10)))
	return err
}

func (s *kvSignOuts) Ended(ctx context.Context, id string) (bool, error) {
	_, err := s.kv.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	}
	return false, err
}
