package memory

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/backlogtest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/registrytest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/relaytest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/sendertest"
)

// The memory sender, relay and backlog pass the suites the HTTP, NATS
// and stream ones pass (in package adapters).

func TestSenderConforms(t *testing.T) {
	sendertest.Run(t, func(*testing.T) (app.Sender, func(sendertest.Receiver) string) {
		s := NewSender("receiver.internal")
		var n atomic.Int64
		return s, func(receive sendertest.Receiver) string {
			url := fmt.Sprintf("http://receiver.internal/hooks/%d", n.Add(1))
			if receive != nil {
				s.Listen(url, func(h http.Header, body []byte) EndpointAnswer {
					a := receive(h, body)
					header := http.Header{}
					if a.RetryAfter != "" {
						header.Set("Retry-After", a.RetryAfter)
					}
					return EndpointAnswer{Status: a.Status, Header: header, Body: a.Body}
				})
			}
			return url
		}
	})
}

func TestRelayConforms(t *testing.T) {
	relaytest.Run(t, func(*testing.T) (app.Relay, app.Sender) {
		rl := NewRelay()
		rl.Timeout = 300 * time.Millisecond
		s := NewSender()
		s.Relay = rl
		return rl, s
	})
}

func TestBacklogConforms(t *testing.T) {
	backlogtest.Run(t, func(*testing.T) (app.Backlog, app.Queue, func(*webhooksv1.DeliveryJob)) {
		q := NewQueue()
		b := NewBacklog(q)
		return b, q, b.Delivered
	})
}

func TestRegistryConformsAsSubscriptions(t *testing.T) {
	registrytest.RunSubscriptions(t, func(*testing.T) (app.Subscriptions, registrytest.Record) {
		r := NewRegistry()
		var seq atomic.Uint64
		// The repository puts each change inline, at its log sequence.
		return r, func(_ registrytest.Change, w *webhooksv1.Webhook) (time.Time, error) {
			r.Put(seq.Add(1), w)
			return time.Now(), nil
		}
	})
}

func TestRegistryConforms(t *testing.T) {
	registrytest.Run(t, func(*testing.T) (app.Registry, registrytest.Store, func(*testing.T)) {
		r := NewRegistry()
		var seq atomic.Uint64
		store := func(*webhooksv1.Webhook) (uint64, error) { return seq.Add(1), nil } // no log: the sequence alone
		return r, store, func(*testing.T) {}
	})
}
