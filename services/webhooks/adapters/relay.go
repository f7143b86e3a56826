package adapters

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// HeaderRelayStatus carries, in a relay client's answer, the status its
// local receiver answered (0: it could not be reached).
const HeaderRelayStatus = "Voiceai-Relay-Status"

// HeaderRelayError carries why a relay client's local receiver could not
// be reached.
const HeaderRelayError = "Voiceai-Relay-Error"

// Relay hands the deliveries of relay webhooks to the client polling for
// them: a NATS request on the webhook's relay subject with the attempt's
// headers and body, answered with the outcome of the client's local
// POST. Nobody polling is a network error, retried like an unreachable
// receiver.
type Relay struct {
	NC      *nats.Conn
	Timeout time.Duration // the attempt's time limit, as for HTTP
}

// Send makes one attempt through the relay.
func (rl Relay) Send(ctx context.Context, workspaceID string, r delivery.Request) delivery.Result {
	start := time.Now()
	res := rl.send(ctx, workspaceID, r)
	res.Duration = time.Since(start)
	return res
}

func (rl Relay) send(ctx context.Context, workspaceID string, r delivery.Request) delivery.Result {
	subject, err := events.WebhookRelaySubject(workspaceID, r.WebhookID)
	if err != nil {
		return delivery.Result{Outcome: domain.Outcome{Refused: true}, Error: "invalid relay subject"}
	}
	msg := nats.NewMsg(subject)
	msg.Data = r.Body
	for k, v := range delivery.Headers(r) {
		msg.Header[k] = v
	}
	ctx, cancel := context.WithTimeout(ctx, rl.Timeout)
	defer cancel()
	reply, err := rl.NC.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return delivery.Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "no relay client is listening"}
	case err != nil && ctx.Err() != nil:
		return delivery.Result{Outcome: domain.Outcome{NetworkErr: true}, Error: fmt.Sprintf("the relay client did not answer within %s", rl.Timeout)}
	case err != nil:
		return delivery.Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "relay failed: " + err.Error()}
	}
	code, _ := strconv.Atoi(reply.Header.Get(HeaderRelayStatus))
	body := reply.Data
	if len(body) > delivery.MaxKeptResponse {
		body = body[:delivery.MaxKeptResponse]
	}
	out := delivery.Result{Outcome: domain.Outcome{StatusCode: code}, ResponseBody: body}
	switch {
	case code == 0:
		out.Outcome = domain.Outcome{NetworkErr: true}
		out.Error = "relayed, but the local receiver could not be reached: " + reply.Header.Get(HeaderRelayError)
	case code < 200 || code >= 300:
		out.Error = fmt.Sprintf("HTTP %d (relayed)", code)
	}
	return out
}

// Take implements app.Relay: a queue subscription ("relay") on the
// webhook's relay subject that takes one request.
func (rl Relay) Take(ctx context.Context, workspaceID, webhookID string) (*app.RelayRequest, error) {
	subject, err := events.WebhookRelaySubject(workspaceID, webhookID)
	if err != nil {
		return nil, err
	}
	sub, err := rl.NC.QueueSubscribeSync(subject, "relay")
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	// One delivery per poll: the server stops sending after it, so no
	// other request waits in a buffer that is about to be dropped.
	if err := sub.AutoUnsubscribe(1); err != nil {
		return nil, err
	}
	msg, err := sub.NextMsgWithContext(ctx)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, nil // the wait ended, or the client went away: nothing came
	}
	if err != nil {
		return nil, err
	}
	out := &app.RelayRequest{Reply: msg.Reply, Headers: map[string]string{}, Body: msg.Data}
	for k := range msg.Header {
		out.Headers[k] = msg.Header.Get(k)
	}
	return out, nil
}

// Answer implements app.Relay: the outcome in the relay headers, the
// body cut to what an attempt keeps.
func (rl Relay) Answer(_ context.Context, reply string, status int, body []byte, errText string) error {
	msg := nats.NewMsg(reply)
	msg.Header.Set(HeaderRelayStatus, strconv.Itoa(status))
	if errText != "" {
		msg.Header.Set(HeaderRelayError, errText)
	}
	if len(body) > delivery.MaxKeptResponse {
		body = body[:delivery.MaxKeptResponse]
	}
	msg.Data = body
	return rl.NC.PublishMsg(msg)
}
