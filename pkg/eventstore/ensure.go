package eventstore

import (
	"context"
	"errors"
	"reflect"

	"github.com/nats-io/nats.go/jetstream"
)

// EnsureConfig creates stream want.Name, or updates it when its settings
// differ from want, and returns it. Every process of the suite ensures the
// streams it uses when it starts; an update that changes nothing is not
// sent, since the server applies a stream update while consumers are being
// created on the same stream without a lock (a data race in
// nats-server 2.15's file store, seen under -race).
func EnsureConfig(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, want)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return s, err
		}
		s, err = js.Stream(ctx, want.Name) // created meanwhile by another process
	}
	if err != nil {
		return nil, err
	}
	if covers(s.CachedInfo().Config, want) {
		return s, nil
	}
	return js.UpdateStream(ctx, want)
}

// covers reports whether have already has every setting want sets (its
// non-zero fields); the server fills in defaults for the rest.
func covers(have, want jetstream.StreamConfig) bool {
	h, w := reflect.ValueOf(&have).Elem(), reflect.ValueOf(want)
	for i := range w.NumField() {
		if f := w.Field(i); !f.IsZero() && !reflect.DeepEqual(f.Interface(), h.Field(i).Interface()) {
			return false
		}
	}
	return true
}
