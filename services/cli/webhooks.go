package cli

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

type webhook struct {
	ID             string   `json:"webhook_id"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Active         bool     `json:"active"`
	Secret         string   `json:"secret"` // only in the create answer
	DisabledReason *string  `json:"disabled_reason"`
	Created        int64    `json:"created_at_unix"`
}

func (a *app) webhooksListCommand() *cobra.Command {
	var cursor string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's webhooks, oldest first, 100 a page",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Webhooks   []webhook `json:"data"`
				Pagination struct {
					HasMore    bool    `json:"has_more"`
					NextCursor *string `json:"next_cursor"`
				} `json:"pagination"`
			}
			var q url.Values
			if cursor != "" {
				q = url.Values{"cursor": {cursor}}
			}
			if show, err := a.fetch(cmd.Context(), listWebhooks, nil, q, nil, &out); !show {
				return err
			}
			rows := make([][]string, len(out.Webhooks))
			for i, w := range out.Webhooks {
				state := "active"
				if !w.Active {
					state = "inactive"
				}
				if w.DisabledReason != nil {
					state = "disabled: " + *w.DisabledReason
				}
				// A relay webhook has no url.
				rows[i] = []string{w.ID, dash(clip(w.URL, 60)), clip(strings.Join(w.Events, ","), 60), clip(state, 40), unixTime(w.Created)}
			}
			table(a.stdout, []string{"ID", "URL", "EVENTS", "STATE", "CREATED"}, rows)
			a.moreHint(out.Pagination.HasMore, out.Pagination.NextCursor)
			return nil
		},
	}
	cmd.Flags().StringVar(&cursor, "cursor", "", "the page after the one that named this cursor")
	return cmd
}

func (a *app) webhooksCreateCommand() *cobra.Command {
	var target, secret string
	var events []string
	var inactive bool
	cmd := &cobra.Command{
		Use:   "create --url <https://…> --event <name> [--event <name> ...]",
		Short: "Create a webhook; its signing secret is shown once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			body := map[string]any{"url": target, "events": events, "active": !inactive}
			if secret != "" {
				body["secret"] = secret
			}
			var w webhook
			if show, err := a.fetch(cmd.Context(), createWebhook, nil, nil, body, &w); !show {
				return err
			}
			fields(a.stdout, "ID", w.ID, "URL", w.URL, "Events", strings.Join(w.Events, ", "), "Secret", w.Secret)
			fmt.Fprintln(a.stderr, "The signing secret is shown only now: store it safely.")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "url", "", "HTTPS address the deliveries are POSTed to (required)")
	f.StringSliceVar(&events, "event", nil, "event name, e.g. call_ended (repeatable, required)")
	f.StringVar(&secret, "secret", "", "signing secret (default: generated)")
	f.BoolVar(&inactive, "inactive", false, "create it inactive")
	_ = cmd.MarkFlagRequired("url")
	_ = cmd.MarkFlagRequired("event")
	return cmd
}

func (a *app) webhooksLogsCommand() *cobra.Command {
	var limit int
	var event, status, cursor string
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "logs <webhook_id>",
		Short: "Show a webhook's delivery attempts, newest first, a page at a time",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct {
				Deliveries []struct {
					Timestamp  string `json:"timestamp"`
					Event      string `json:"event"`
					EventID    string `json:"event_id"`
					DeliveryID string `json:"delivery_id"`
					Status     string `json:"status"`
					Code       int    `json:"response_code"`
					TimeMS     *int64 `json:"delivery_time_ms"`
					Retries    int    `json:"retry_count"`
					Error      string `json:"error"`
				} `json:"recent_deliveries"`
				NextCursor *string `json:"next_cursor"`
				HasMore    bool    `json:"has_more"`
			}
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			for k, v := range map[string]string{"event": event, "status": status, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if since > 0 {
				q.Set("start_time", strconv.FormatInt(time.Now().Add(-since).Unix(), 10))
			}
			if show, err := a.fetch(cmd.Context(), webhookLogs, args, q, nil, &out); !show {
				return err
			}
			rows := make([][]string, len(out.Deliveries))
			for i, d := range out.Deliveries {
				detail := d.Error
				if d.TimeMS != nil {
					detail = strconv.FormatInt(*d.TimeMS, 10) + " ms"
				}
				rows[i] = []string{d.Timestamp, d.Event, d.Status, strconv.Itoa(d.Code), strconv.Itoa(d.Retries), d.DeliveryID, clip(detail, 80)}
			}
			table(a.stdout, []string{"TIME", "EVENT", "STATUS", "CODE", "RETRIES", "DELIVERY", "DETAIL"}, rows)
			a.moreHint(out.HasMore, out.NextCursor)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 50, "attempts to show (1-100)")
	f.StringVar(&cursor, "cursor", "", "the page after the one that named this cursor (the same filters)")
	f.StringVar(&event, "event", "", "only attempts of this event, e.g. call_ended")
	f.StringVar(&status, "status", "", "only success or failed attempts")
	f.DurationVar(&since, "since", 0, "only attempts made in this last while, e.g. 1h")
	return cmd
}

func (a *app) webhooksDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete <webhook_id>",
		Short: "Delete a webhook (e.g. a relay webhook listen could not delete)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if show, err := a.fetch(cmd.Context(), deleteWebhook, args, nil, nil, nil); !show {
				return err
			}
			fmt.Fprintf(a.stdout, "Deleted webhook %s.\n", args[0])
			return nil
		},
	}
}

type resent struct {
	DeliveryID string `json:"delivery_id"`
	EventID    string `json:"event_id"`
	Event      string `json:"event"`
	Status     string `json:"status"`
}

func (a *app) webhooksResendCommand() *cobra.Command {
	return callCommand(a, "resend <webhook_id> <delivery_id>",
		"Deliver an event again (same body and event id); the delivery id is in webhooks logs", resendDelivery,
		func(out resent) {
			fields(a.stdout, "Delivery", out.DeliveryID, "Event", out.Event, "Event ID", out.EventID, "Status", out.Status)
		})
}

func (a *app) webhooksRecoverCommand() *cobra.Command {
	var since time.Duration
	var event string
	cmd := &cobra.Command{
		Use:   "recover <webhook_id> --since 2h [--event NAME]",
		Short: "Resend every delivery that failed for good in this last while and was not delivered since",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"start_time": time.Now().Add(-since).Unix()}
			if event != "" {
				body["event"] = event
			}
			var out struct {
				Count      int      `json:"recovered_count"`
				Deliveries []resent `json:"deliveries"`
				HasMore    bool     `json:"has_more"`
			}
			if show, err := a.fetch(cmd.Context(), recoverDeliveries, args, nil, body, &out); !show {
				return err
			}
			rows := make([][]string, len(out.Deliveries))
			for i, d := range out.Deliveries {
				rows[i] = []string{d.DeliveryID, d.Event, d.EventID}
			}
			table(a.stdout, []string{"DELIVERY", "EVENT", "EVENT ID"}, rows)
			fmt.Fprintf(a.stderr, "%d deliveries queued again\n", out.Count)
			if out.HasMore {
				fmt.Fprintln(a.stderr, "more remain: run recover again")
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&since, "since", 24*time.Hour, "how far back to look, e.g. 2h")
	cmd.Flags().StringVar(&event, "event", "", "only this event")
	return cmd
}
