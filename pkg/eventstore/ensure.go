package eventstore

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// EnsureConfig creates stream want.Name, or updates it when its settings
// differ from want, and returns it. Every process of the suite ensures the
// streams it uses when it starts; an update that changes nothing is not
// sent, since the server applies a stream update while consumers are being
// created on the same stream without a lock (a data race in
// nats-server 2.15's file store, seen under -race).
//
// A stream that cannot answer yet (a new replicated stream before its
// first leader, a cluster between leaders) is asked again until ctx ends,
// so processes started together on a fresh cluster wait for their
// streams instead of exiting (see UntilAvailable).
func EnsureConfig(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	return UntilAvailable(ctx, "stream "+want.Name, func(ctx context.Context) (jetstream.Stream, error) {
		return ensureOnce(ctx, js, want)
	})
}

// EnsureConsumer creates or updates the durable consumer cfg.Durable of
// stream, asking again while the cluster cannot answer (a new replicated
// consumer elects a leader of its own before the server answers).
//
// Where a durable starts is cfg's only when it is created: the server
// refuses to change it, and one made again after a deletion starts after
// its old floor (package consume), so an update it refuses for a durable
// that starts elsewhere is sent again keeping that start.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	return UntilAvailable(ctx, "consumer "+cfg.Durable, func(ctx context.Context) (jetstream.Consumer, error) {
		c, err := js.CreateOrUpdateConsumer(ctx, stream, cfg)
		var refused *jetstream.APIError
		if !errors.As(err, &refused) {
			return c, err
		}
		cur, lerr := js.Consumer(ctx, stream, cfg.Durable)
		if lerr != nil {
			return c, err
		}
		was := cur.CachedInfo().Config
		if was.DeliverPolicy == cfg.DeliverPolicy && was.OptStartSeq == cfg.OptStartSeq && reflect.DeepEqual(was.OptStartTime, cfg.OptStartTime) {
			return c, err // refused for another reason
		}
		cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = was.DeliverPolicy, was.OptStartSeq, was.OptStartTime
		return js.CreateOrUpdateConsumer(ctx, stream, cfg)
	})
}

// EnsureKeyValue creates the key-value bucket cfg.Bucket, or updates it
// when it lacks a setting of cfg, asking again while the cluster cannot
// answer. A bucket that has them is left alone: CreateOrUpdateKeyValue
// updated it at every start, and an update races in the server with
// consumers (watchers) being created.
func EnsureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return UntilAvailable(ctx, "bucket "+cfg.Bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		kv, err := js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, cfg)
			if !errors.Is(err, jetstream.ErrBucketExists) {
				return kv, err
			}
			kv, err = js.KeyValue(ctx, cfg.Bucket) // made meanwhile by another process
		}
		if err != nil {
			return nil, err
		}
		status, err := kv.Status(ctx)
		if err != nil {
			return nil, err
		}
		if st, ok := status.(*jetstream.KeyValueBucketStatus); ok && covers(st.Config(), cfg) {
			return kv, nil
		}
		return js.UpdateKeyValue(ctx, cfg)
	})
}

// OpenKeyValue opens the key-value bucket whose stream the caller has just
// ensured, asking again while the cluster cannot answer or the server
// asked does not know the new stream yet: on a fresh replicated cluster,
// a lookup right after another process made it may find no bucket.
func OpenKeyValue(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	return UntilAvailable(ctx, "bucket "+bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		kv, err := js.KeyValue(ctx, bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, unavailable{err}
		}
		return kv, err
	})
}

// UntilAvailable calls op until it succeeds, fails for a reason a retry
// cannot cure, or ctx ends, backing off between attempts. An attempt
// waits 1 s for its answer at first (a stream or consumer without a
// leader sends none, and the client's 5 s default made every process of a
// fresh cluster ready 5 or 10 s late), then twice as long each time, up to
// 8 s, so a slow but answering cluster is still waited for.
func UntilAvailable[T any](ctx context.Context, what string, op func(context.Context) (T, error)) (T, error) {
	attempt := time.Second
	return eventlog.RetryWhileUnavailable(ctx, func() (T, error) {
		actx, cancel := context.WithTimeout(ctx, attempt)
		defer cancel()
		attempt = min(2*attempt, 8*time.Second)
		v, err := op(actx)
		return v, Classify(err)
	}, func(err error, wait time.Duration) {
		slog.Warn("not available yet; asking again", "what", what, "in", wait, "err", err)
	})
}

func ensureOnce(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, want)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return s, storeNotMadeYet(err)
		}
		s, err = js.Stream(ctx, want.Name) // created meanwhile by another process
	}
	if err != nil {
		return nil, notKnownYet(err)
	}
	if covers(s.CachedInfo().Config, want) {
		return s, nil
	}
	s, err = js.UpdateStream(ctx, want)
	return s, notKnownYet(err)
}

// notKnownYet is err, but asked again when it says the stream is not
// found: ensureOnce meets a stream it or another process has just made
// (its name in use, or found a moment before), which a server of a fresh
// replicated cluster may not know yet (a runner exited at start on an
// update of TESTRUNS answered 404 as the testing service made it).
func notKnownYet(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return unavailable{err}
	}
	return err
}

// storeNotMadeYet is err, but asked again when the server could not make
// the new stream's directory: deleting an account's last stream has the
// server remove the account's emptied directories in the background,
// which can pull them from under a create made at once (a restore in a
// test; CI saw "error creating store for stream"), and a second create
// succeeds. A store that can never be made keeps being asked for, each
// time logged, until the caller's context ends.
func storeNotMadeYet(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == streamCreateFailed && apiErr.Description == storeFailed {
		return unavailable{err}
	}
	return err
}

// streamCreateFailed (JSStreamCreateErrF) and storeFailed are how
// nats-server answers a stream create whose files it could not make.
const (
	streamCreateFailed jetstream.ErrorCode = 10049
	storeFailed                            = "error creating store for stream"
)

// covers reports whether have already has every setting want sets (its
// non-zero fields); the server fills in defaults for the rest.
func covers[Config any](have, want Config) bool {
	h, w := reflect.ValueOf(&have).Elem(), reflect.ValueOf(want)
	for i := range w.NumField() {
		if f := w.Field(i); !f.IsZero() && !reflect.DeepEqual(f.Interface(), h.Field(i).Interface()) {
			return false
		}
	}
	return true
}
