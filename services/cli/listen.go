package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// forwardTimeout bounds one POST to the local receiver: well within the
// dispatcher's attempt time limit, which is waiting for the outcome.
const forwardTimeout = 8 * time.Second

func (a *app) webhooksListenCommand() *cobra.Command {
	var forwardTo, webhookID, secret string
	var events []string
	var keep bool
	cmd := &cobra.Command{
		Use:   "listen --forward-to http://localhost:3000/hook [--event NAME ...]",
		Short: "Relay webhook deliveries to a local receiver, signed, with no public URL or allow-list",
		Long: `listen creates a relay webhook (one without a url) for the events named (default: every
event), polls the platform for its deliveries and POSTs each, with its headers and
signature unchanged, to --forward-to. What the receiver answers is the delivery's outcome:
it shows in webhooks logs, and a failure is retried as for any webhook. The signing
secret is printed on stderr: give it to the receiver. The rate limit, an outage or a lost
connection do not stop it: it waits (as long as Retry-After asks) and polls again, saying
so on stderr. Ctrl-C stops listening and deletes the webhook (--keep keeps it; --webhook
reuses one); if it cannot, it says which webhook is left.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			u, err := url.Parse(forwardTo)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("--forward-to %q is not an http(s) URL", forwardTo)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if webhookID == "" {
				if webhookID, err = a.createRelay(ctx, c, events, secret); err != nil {
					return err
				}
				if !keep {
					defer func() { // a webhook left behind fails the command: a script must clean up
						if left := a.deleteRelay(c, webhookID); left != nil && err == nil {
							err = left
						}
					}()
				}
			}
			fmt.Fprintf(a.stderr, "Relaying the deliveries of webhook %s to %s (Ctrl-C stops).\n", webhookID, forwardTo)
			return a.relay(ctx, c, webhookID, forwardTo)
		},
	}
	f := cmd.Flags()
	f.StringVar(&forwardTo, "forward-to", "", "the local receiver's URL (required)")
	f.StringSliceVar(&events, "event", nil, "event to subscribe to (repeatable; default every event)")
	f.StringVar(&webhookID, "webhook", "", "relay the deliveries of this relay webhook instead of creating one")
	f.StringVar(&secret, "secret", "", "signing secret of the webhook created (default: generated)")
	f.BoolVar(&keep, "keep", false, "keep the webhook created when listening stops")
	_ = cmd.MarkFlagRequired("forward-to")
	return cmd
}

// createRelay creates a relay webhook for events (every event when none)
// and prints its secret.
func (a *app) createRelay(ctx context.Context, c *client, events []string, secret string) (string, error) {
	if len(events) == 0 {
		var catalog struct {
			Events []struct {
				Name string `json:"name"`
			} `json:"events"`
		}
		if _, err := c.call(ctx, eventCatalog, nil, nil, nil, &catalog); err != nil {
			return "", err
		}
		for _, e := range catalog.Events {
			events = append(events, e.Name)
		}
	}
	body := map[string]any{"relay": true, "events": events}
	if secret != "" {
		body["secret"] = secret
	}
	var w webhook
	if _, err := c.call(ctx, createWebhook, nil, nil, body, &w); err != nil {
		return "", err
	}
	fmt.Fprintf(a.stderr, "Created relay webhook %s. Its signing secret (give it to your receiver):\n%s\n", w.ID, w.Secret)
	return w.ID, nil
}

// deleteWithin bounds how long listen, stopping, tries to delete the
// webhook it created.
var deleteWithin = 30 * time.Second

// deleteRelay deletes the relay webhook listen created, trying again on
// the rate limit (as long as Retry-After asks, within deleteWithin) and
// on outages; when it cannot, its error says which webhook is left and
// how to delete it.
func (a *app) deleteRelay(c *client, webhookID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), deleteWithin)
	defer cancel()
	err := a.persist(ctx, "deleting webhook "+webhookID, true, func() error {
		_, err := c.call(ctx, deleteWebhook, []string{webhookID}, nil, nil, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("could not delete relay webhook %s: %w\nIt is left, active: delete it with `voiceai webhooks delete %s`", webhookID, err, webhookID)
	}
	return nil
}

// relay polls for deliveries and forwards each until ctx ends. The rate
// limit, an outage or a lost connection do not stop it: it waits (as long
// as Retry-After asks) and polls again, saying so once per outage.
func (a *app) relay(ctx context.Context, c *client, webhookID, forwardTo string) error {
	local := &http.Client{Timeout: forwardTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	what := "polling webhook " + webhookID + " for deliveries"
	for ctx.Err() == nil {
		var next wire.RelayNext
		err := a.persist(ctx, what, false, func() error {
			next = wire.RelayNext{}
			_, err := c.call(ctx, relayNext, []string{webhookID}, nil, map[string]any{"wait_ms": 20000}, &next)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		d := next.Delivery
		if d == nil {
			continue
		}
		status, answer, errText := forward(ctx, local, forwardTo, d.Headers, d.Body)
		result := map[string]any{"token": d.Token, "status_code": status, "response_body": answer, "error": errText}
		if err := a.persist(ctx, "reporting the outcome of a delivery of webhook "+webhookID, false, func() error {
			_, err := c.call(ctx, relayResult, []string{webhookID}, nil, result, nil)
			return err
		}); err != nil {
			fmt.Fprintf(a.stderr, "could not report the outcome (the delivery will be retried): %v\n", err)
		}
		outcome := fmt.Sprint(status)
		if status == 0 {
			outcome = "unreachable: " + errText
		}
		fmt.Fprintf(a.stdout, "%s  %-26s %s -> %s\n", time.Now().UTC().Format(time.RFC3339), oneLine(d.Headers["X-Service-Event"]), oneLine(d.Headers["X-Service-Event-Id"]), oneLine(outcome))
	}
	return nil
}

// forward POSTs one delivery to the local receiver: status 0 and why,
// when it could not be reached.
func forward(ctx context.Context, local *http.Client, target string, headers map[string]string, body string) (int, string, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, "", err.Error()
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := local.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, "", err.Error()
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return resp.StatusCode, string(answer), ""
}
