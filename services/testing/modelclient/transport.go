package modelclient

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// timedTransport times the requests of a turn that carries a
// WireClock.
type timedTransport struct{ base http.RoundTripper }

func (t timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	clock, ok := model.WireClockOf(r.Context())
	if !ok {
		return t.base.RoundTrip(r)
	}
	begin := time.Now()
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		clock.Add(time.Since(begin))
		return resp, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, done: func() { clock.Add(time.Since(begin)) }}
	return resp, nil
}

// timedBody calls done once: when its end is read, or it is closed.
type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}
