package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// MaxRelayWait bounds how long a poll for a relay delivery waits: well
// within the gateway's 30 s request time limit.
const MaxRelayWait = 20 * time.Second

// RelayDelivery is one delivery handed to a polling client: what it POSTs
// to its local receiver, and the token it reports the outcome with.
type RelayDelivery struct {
	Token   string
	Headers map[string]string
	Body    []byte
}

// RelayNext waits up to wait for the next delivery of a relay webhook and
// hands it over (nil when none came). Clients polling one webhook share
// its deliveries: each goes to one of them.
func (a *App) RelayNext(ctx context.Context, p principal.Caller, webhookID string, wait time.Duration) (*RelayDelivery, error) {
	w, err := a.Get(p.WorkspaceID, webhookID)
	if err != nil {
		return nil, err
	}
	if !w.GetRelay() {
		return nil, apperr.NotARelayWebhook
	}
	ctx, cancel := context.WithTimeout(ctx, min(wait, MaxRelayWait))
	defer cancel()
	if a.Stopping != nil {
		defer context.AfterFunc(a.Stopping, cancel)()
	}
	req, err := a.Relay.Take(ctx, w.GetWorkspaceId(), w.GetWebhookId())
	if err != nil || req == nil {
		return nil, err
	}
	out := &RelayDelivery{Token: a.relayToken(w.GetWorkspaceId(), w.GetWebhookId(), req.Reply), Headers: req.Headers, Body: req.Body}
	return out, nil
}

// RelayResult reports what the client's local receiver answered a relay
// delivery (status 0: it could not be reached, errText says why): the
// dispatcher records it and retries as for any receiver.
func (a *App) RelayResult(ctx context.Context, p principal.Caller, webhookID, token string, status int, body []byte, errText string) error {
	w, err := a.Get(p.WorkspaceID, webhookID)
	if err != nil {
		return err
	}
	if !w.GetRelay() {
		return apperr.NotARelayWebhook
	}
	reply, ok := a.openRelayToken(w.GetWorkspaceId(), w.GetWebhookId(), token)
	if !ok {
		var v apperr.Validator
		v.Add("The token is not one this webhook's poll handed out", "value_error", "body", "token")
		return v.Err()
	}
	// The dispatcher may have given up waiting (its attempt time limit):
	// then nobody reads this, and the delivery is retried as timed out.
	return a.Relay.Answer(ctx, reply, status, body, errText)
}

// relayToken binds a dispatcher's reply inbox to the webhook it serves, so
// a result can reach only the attempt it answers.
func (a *App) relayToken(workspaceID, webhookID, reply string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(reply)) + "." + base64.RawURLEncoding.EncodeToString(a.relayMAC(workspaceID, webhookID, reply))
}

func (a *App) openRelayToken(workspaceID, webhookID, token string) (string, bool) {
	enc, mac, ok := strings.Cut(token, ".")
	if !ok { // at most 1024 characters, as the schema (RelayResult) says
		return "", false
	}
	reply, err1 := base64.RawURLEncoding.DecodeString(enc)
	sum, err2 := base64.RawURLEncoding.DecodeString(mac)
	if err1 != nil || err2 != nil || !hmac.Equal(sum, a.relayMAC(workspaceID, webhookID, string(reply))) {
		return "", false
	}
	return string(reply), true
}

func (a *App) relayMAC(workspaceID, webhookID, reply string) []byte {
	m := hmac.New(sha256.New, a.RelayKey)
	m.Write([]byte(workspaceID + "\x00" + webhookID + "\x00" + reply))
	return m.Sum(nil)
}
