package gateway

import (
	"context"
	"errors"
	"log/slog"
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

// signOutsCheckEvery is how often each replica looks the bucket up: one
// deleted is made again, and a session signed in before the bucket in use
// was made is refused at every replica within this long.
var signOutsCheckEvery = 5 * time.Second

// clockSkew is how far a gateway's clock (a session's sign-in) and the
// NATS server's (the bucket's making) may disagree: a session signed in
// this long before the bucket was made, or less, is still honoured.
const clockSkew = time.Minute

// signOuts is the shared list of signed-out sessions.
type signOuts interface {
	// End records that session id is over, for good.
	End(ctx context.Context, id string, expires time.Time) error
	// Ended reports whether session id, signed in at issued, was signed
	// out, or may have been.
	Ended(ctx context.Context, id string, issued time.Time) (bool, error)
}

// kvSignOuts keeps the list in a JetStream key-value bucket every
// replica reads. Deleted, the bucket is made again, empty: the sign-outs
// it held are lost, so every session signed in before it was made is
// taken as signed out (its people sign in again), rather than honoured.
type kvSignOuts struct {
	kv   *eventstore.KeptKeyValue
	skew time.Duration // clockSkew
}

func newKVSignOuts(ctx context.Context, js jetstream.JetStream, replicas int, log *slog.Logger) (*kvSignOuts, error) {
	kv, err := eventstore.KeepKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      SignOutBucket,
		Description: "Console sessions signed out before their expiry (the gateway's).",
		TTL:         sessionTTL + time.Minute, // the longest a cookie lives, and clock skew
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		History:     1,
	}, log)
	if err != nil {
		return nil, err
	}
	go kv.Keep(ctx, signOutsCheckEvery)
	return &kvSignOuts{kv: kv, skew: clockSkew}, nil
}

func (s *kvSignOuts) End(ctx context.Context, id string, expires time.Time) error {
	_, err := s.kv.Put(ctx, id, []byte(strconv.FormatInt(expires.Unix(), 10)))
	if err != nil {
		s.kv.Heal(err)
	}
	return err
}

func (s *kvSignOuts) Ended(ctx context.Context, id string, issued time.Time) (bool, error) {
	if issued.Before(s.kv.Made().Add(-s.skew)) {
		return true, nil // its sign-out, if any, was in a list since lost
	}
	_, err := s.kv.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	}
	s.kv.Heal(err)
	return false, err
}
