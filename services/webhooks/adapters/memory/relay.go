package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Relay is app.Relay in memory, and the attempts of relay webhooks
// (Send) that it carries, with the NATS relay's meaning: an attempt goes
// to one client polling its webhook at that moment, none polling is a
// network error, and the attempt waits for the client's answer at most
// Timeout.
type Relay struct {
	// Timeout is an attempt's time limit (default 10 s).
	Timeout time.Duration

	mu      sync.Mutex
	polls   map[string][]chan *app.RelayRequest // by workspace/webhook: the polls waiting, oldest first
	replies map[string]chan relayAnswer         // by reply: the attempts waiting for an answer
	n       int
}

type relayAnswer struct {
	status  int
	body    []byte
	errText string
}

// NewRelay is a relay nobody polls yet.
func NewRelay() *Relay {
	return &Relay{polls: map[string][]chan *app.RelayRequest{}, replies: map[string]chan relayAnswer{}}
}

var _ app.Relay = (*Relay)(nil)

// Take implements app.Relay.
func (rl *Relay) Take(ctx context.Context, workspaceID, webhookID string) (*app.RelayRequest, error) {
	if _, err := events.WebhookRelaySubject(workspaceID, webhookID); err != nil {
		return nil, err
	}
	key := workspaceID + "/" + webhookID
	poll := make(chan *app.RelayRequest, 1)
	rl.mu.Lock()
	rl.polls[key] = append(rl.polls[key], poll)
	rl.mu.Unlock()
	select {
	case r := <-poll:
		return r, nil
	case <-ctx.Done():
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if i := slices.Index(rl.polls[key], poll); i >= 0 {
		rl.polls[key] = slices.Delete(rl.polls[key], i, i+1)
		return nil, nil
	}
	return <-poll, nil // handed a delivery as ctx ended: it is this poll's
}

// Polling is how many clients poll the webhook at this moment: a test
// sends once one does.
func (rl *Relay) Polling(workspaceID, webhookID string) int {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return len(rl.polls[workspaceID+"/"+webhookID])
}

// Answer implements app.Relay: an answer nobody waits for any more is
// dropped.
func (rl *Relay) Answer(_ context.Context, reply string, status int, body []byte, errText string) error {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if ch, ok := rl.replies[reply]; ok {
		select {
		case ch <- relayAnswer{status: status, body: body[:min(len(body), delivery.MaxKeptResponse)], errText: errText}:
		default: // answered already
		}
	}
	return nil
}

// Send makes one attempt of r to a relay webhook of the workspace.
func (rl *Relay) Send(ctx context.Context, workspaceID string, r delivery.Request) delivery.Result {
	start := time.Now()
	res := rl.send(ctx, workspaceID, r)
	res.Duration = time.Since(start)
	return res
}

func (rl *Relay) send(ctx context.Context, workspaceID string, r delivery.Request) delivery.Result {
	if _, err := events.WebhookRelaySubject(workspaceID, r.WebhookID); err != nil {
		return delivery.Result{Outcome: domain.Outcome{Refused: true}, Error: "invalid relay subject"}
	}
	timeout := rl.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	key := workspaceID + "/" + r.WebhookID
	rl.mu.Lock()
	if len(rl.polls[key]) == 0 {
		rl.mu.Unlock()
		return delivery.Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "no relay client is listening"}
	}
	poll := rl.polls[key][0]
	rl.polls[key] = rl.polls[key][1:]
	rl.n++
	reply := fmt.Sprintf("_INBOX.memory.%d", rl.n)
	answer := make(chan relayAnswer, 1)
	rl.replies[reply] = answer
	headers := map[string]string{}
	h := delivery.Headers(r)
	for k := range h {
		headers[k] = h.Get(k)
	}
	poll <- &app.RelayRequest{Reply: reply, Headers: headers, Body: r.Body}
	rl.mu.Unlock()
	defer func() {
		rl.mu.Lock()
		delete(rl.replies, reply)
		rl.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var a relayAnswer
	select {
	case a = <-answer:
	case <-ctx.Done():
		return delivery.Result{Outcome: domain.Outcome{NetworkErr: true}, Error: fmt.Sprintf("the relay client did not answer within %s", timeout)}
	}
	out := delivery.Result{Outcome: domain.Outcome{StatusCode: a.status}, ResponseBody: a.body}
	switch {
	case a.status == 0:
		out.Outcome = domain.Outcome{NetworkErr: true}
		out.Error = "relayed, but the local receiver could not be reached: " + a.errText
	case a.status < 200 || a.status >= 300:
		out.Error = fmt.Sprintf("HTTP %d (relayed)", a.status)
	}
	return out
}
