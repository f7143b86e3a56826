package memory

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Endpoint is a webhook's receiver in memory: what it answers a
// delivery's headers and body.
type Endpoint func(header http.Header, body []byte) EndpointAnswer

// EndpointAnswer is a receiver's answer.
type EndpointAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Sender is app.Sender in memory, with the HTTP sender's rules: https,
// or plain http to a host the operator allowed; a URL no endpoint is at
// is unreachable; relay webhooks go through Relay.
type Sender struct {
	guard *outbound.Guard
	// Relay carries relay webhooks' attempts (nil: nobody polls).
	Relay *Relay

	mu        sync.Mutex
	endpoints map[string]Endpoint // by URL
}

// NewSender is a sender whose operator allowed hosts, with no endpoint
// yet.
func NewSender(allowHosts ...string) *Sender {
	return &Sender{guard: outbound.NewGuard(allowHosts), endpoints: map[string]Endpoint{}}
}

var _ app.Sender = (*Sender)(nil)

// Listen puts e at url (nil: nobody listens there any more).
func (s *Sender) Listen(url string, e Endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e == nil {
		delete(s.endpoints, url)
		return
	}
	s.endpoints[url] = e
}

// HostAllowed implements app.Sender.
func (s *Sender) HostAllowed(host string) bool { return s.guard.HostAllowed(host) }

// Send implements app.Sender.
func (s *Sender) Send(ctx context.Context, w *webhooksv1.Webhook, r delivery.Request) delivery.Result {
	if w.GetRelay() {
		if s.Relay == nil {
			return delivery.Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "no relay client is listening"}
		}
		return s.Relay.Send(ctx, w.GetWorkspaceId(), r)
	}
	start := time.Now()
	res := s.send(r)
	res.Duration = time.Since(start)
	return res
}

func (s *Sender) send(r delivery.Request) delivery.Result {
	u, err := url.Parse(r.URL)
	if err != nil {
		return delivery.Result{Outcome: domain.Outcome{Refused: true}, Error: "invalid URL"}
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && s.guard.HostAllowed(u.Hostname())) {
		return delivery.Result{Outcome: domain.Outcome{Refused: true}, Error: "destination refused: plain http is only allowed for operator-allowed hosts"}
	}
	s.mu.Lock()
	e := s.endpoints[r.URL]
	s.mu.Unlock()
	if e == nil {
		return delivery.Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "connection failed: dial tcp: connection refused"}
	}
	a := e(delivery.Headers(r), bytes.Clone(r.Body))
	return delivery.Answered(a.Status, a.Header, a.Body[:min(len(a.Body), delivery.MaxKeptResponse)], time.Second)
}
