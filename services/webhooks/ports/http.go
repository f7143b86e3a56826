// Package ports serves the webhooks API over HTTP (through the gateway):
// management (spec 4.6), the delivery log (6.4), health, test deliveries,
// and the platform-event ingestion endpoint.
//
// Every request body's shape (types, required fields, lengths, ranges,
// event names, the types of an ingested event's data) is its
// operation's schema's in pkg/api, checked by api.Handle before a
// handler runs; the handlers and the app check what no schema can say.
package ports

import (
	"context"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Handlers serve the webhooks operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

// pageQuery is a listing's page in the spec's general convention: limit
// (its range checked at the edge) and cursor.
type pageQuery struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// limitOr is the limit asked for, else def.
func (p pageQuery) limitOr(def int) int {
	if p.Limit > 0 {
		return p.Limit
	}
	return def
}

// List answers a page of the workspace's webhooks, oldest first, under
// the spec's general convention (limit, cursor; data and pagination).
func (h *Handlers) List(c *api.Call) (any, error) {
	var q pageQuery
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	page, err := h.App.ListPage(c.Caller().WorkspaceID, q.limitOr(app.MaxWebhookPage), q.Cursor)
	if err != nil {
		return nil, err
	}
	out := make([]webhookView, 0, len(page.Webhooks))
	for _, wh := range page.Webhooks {
		out = append(out, viewOf(wh, nil, h.App.RunOf(wh)))
	}
	return listView{Data: out, Pagination: pagination{HasMore: page.HasMore, NextCursor: page.NextCursor, TotalCount: page.Total}}, nil
}

// reply writes a webhook (with its secret, when shown), or returns the
// error.
func (h *Handlers) reply(wh *webhooksv1.Webhook, secret *string, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return viewOf(wh, secret, h.App.RunOf(wh)), nil
}

func (h *Handlers) Get(c *api.Call) (any, error) {
	wh, err := h.App.Get(c.Caller().WorkspaceID, c.ID())
	return h.reply(wh, nil, err)
}

func (h *Handlers) Create(c *api.Call) (any, error) {
	var in domain.Input
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	wh, secret, err := h.App.Create(c.Context(), c.Caller(), in)
	return h.reply(wh, &secret, err)
}

func (h *Handlers) Update(c *api.Call) (any, error) {
	var in domain.Input
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	wh, err := h.App.Update(c.Context(), c.Caller(), c.ID(), in)
	return h.reply(wh, nil, err)
}

func (h *Handlers) Delete(c *api.Call) (any, error) {
	return api.Remove(c, h.App.Delete)
}

type testInput struct {
	EventType string `json:"event_type"`
}

func (h *Handlers) Test(c *api.Call) (any, error) {
	return api.CommandOn(c, func(ctx context.Context, caller principal.Caller, id string, in testInput) (*webhooksv1.DeliveryAttempt, error) {
		return h.App.Test(ctx, caller, id, in.EventType)
	}, testViewOf)
}

func (h *Handlers) Logs(c *api.Call) (any, error) {
	// The edge has checked the query against the parameters' schemas
	// (limit's range, the event and status enums, the times' range).
	var q struct {
		pageQuery
		Event     string `json:"event"`
		Status    string `json:"status"`
		StartTime int64  `json:"start_time"` // unix seconds
		EndTime   int64  `json:"end_time"`
	}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	if q.StartTime > 0 && q.EndTime > 0 && q.EndTime <= q.StartTime { // as recover's window: no empty page for a reversed one
		return nil, apperr.ValidationErrors{{Loc: []any{"query", "end_time"}, Msg: "Input should be a Unix time in seconds after start_time", Type: "value_error"}}
	}
	f := domain.LogFilter{Event: q.Event, Status: q.Status, FromMs: q.StartTime * 1000, ToMs: q.EndTime * 1000}
	id := c.ID()
	page, err := h.App.Logs(c.Context(), c.Caller().WorkspaceID, id, f, q.limitOr(app.DefaultLogLimit), q.Cursor)
	if err != nil {
		return nil, err
	}
	out := logsView{WebhookID: id, RecentDeliveries: make([]logEntry, 0, len(page.Attempts)), NextCursor: page.NextCursor, HasMore: page.HasMore}
	for _, a := range page.Attempts {
		out.RecentDeliveries = append(out.RecentDeliveries, logEntryOf(a))
	}
	return out, nil
}

// catalog lists every subscribable event with the JSON Schema of its
// data, taken from the API's OpenAPI document.
func (h *Handlers) EventCatalog(*api.Call) (any, error) {
	type entry struct {
		Name        string         `json:"name"`
		Group       string         `json:"group"`
		Description string         `json:"description"`
		DataSchema  map[string]any `json:"data_schema"`
		// WorkspaceEvent is the workspace webhooks API's event type that
		// covers it (agent_qa), or null.
		WorkspaceEvent *string `json:"workspace_event"`
	}
	out := struct {
		Events []entry `json:"events"`
	}{Events: make([]entry, 0, len(domain.Catalog))}
	for _, e := range domain.Catalog {
		x := entry{Name: e.Name, Group: e.Group, Description: e.Description}
		if t := domain.WorkspaceEventOf(e.Name); t != "" {
			x.WorkspaceEvent = &t
		}
		if e.DataSchema != "" {
			s, err := api.Schema(e.DataSchema)
			if err != nil {
				return nil, err
			}
			x.DataSchema = s
		}
		out.Events = append(out.Events, x)
	}
	return out, nil
}

func (h *Handlers) Resend(c *api.Call) (any, error) {
	res, err := h.App.Resend(c.Context(), c.Caller(), c.PathID("webhook_id"), c.PathID("delivery_id"))
	return api.View(res, err, resentViewOf)
}

func (h *Handlers) Recover(c *api.Call) (any, error) {
	var in struct {
		StartTime *int64  `json:"start_time"`
		EndTime   *int64  `json:"end_time"`
		Event     *string `json:"event"`
	}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	// Types, ranges and the event's name are the schema's (Recover),
	// checked at the edge; the order of the two times is this handler's.
	f := domain.LogFilter{FromMs: *in.StartTime * 1000}
	if in.EndTime != nil {
		if *in.EndTime <= *in.StartTime {
			return nil, apperr.ValidationErrors{{Loc: []any{"body", "end_time"}, Msg: "Input should be a Unix time in seconds after start_time", Type: "value_error"}}
		}
		f.ToMs = *in.EndTime * 1000
	}
	if in.Event != nil {
		f.Event = *in.Event
	}
	resent, more, err := h.App.Recover(c.Context(), c.Caller(), c.ID(), f)
	if err != nil {
		return nil, err
	}
	out := recoveredView{Deliveries: make([]resentView, 0, len(resent)), HasMore: more}
	for _, x := range resent {
		out.Deliveries = append(out.Deliveries, resentViewOf(x))
	}
	out.RecoveredCount = len(out.Deliveries)
	return out, nil
}

func (h *Handlers) RelayNext(c *api.Call) (any, error) {
	var in struct {
		WaitMs *int64 `json:"wait_ms"`
	}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	wait := app.MaxRelayWait
	if in.WaitMs != nil { // 0 to MaxRelayWait, as the schema (RelayPoll) says
		wait = time.Duration(*in.WaitMs) * time.Millisecond
	}
	d, err := h.App.RelayNext(c.Context(), c.Caller(), c.ID(), wait)
	if err != nil {
		return nil, err
	}
	var out wire.RelayNext
	if d != nil {
		out.Delivery = &wire.RelayDelivery{Token: d.Token, Headers: d.Headers, Body: string(d.Body)}
	}
	return out, nil
}

func (h *Handlers) RelayResult(c *api.Call) (any, error) {
	var in struct {
		Token        *string `json:"token"`
		StatusCode   *int    `json:"status_code"`
		ResponseBody string  `json:"response_body"`
		Error        string  `json:"error"`
	}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	// The schema (RelayResult) requires both, and bounds them: the token's
	// length, the status 0 or 100 to 599.
	return nil, h.App.RelayResult(c.Context(), c.Caller(), c.ID(), *in.Token, *in.StatusCode, []byte(in.ResponseBody), in.Error)
}

func (h *Handlers) Health(c *api.Call) (any, error) {
	rows, err := h.App.Health(c.Context(), c.Caller().WorkspaceID)
	if err != nil {
		return nil, err
	}
	out := healthView{Webhooks: make([]webhookHealth, 0, len(rows))}
	for _, row := range rows {
		out.Webhooks = append(out.Webhooks, healthOf(row))
	}
	return out, nil
}

func (h *Handlers) Ingest(c *api.Call) (any, error) {
	var in domain.IngestInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	if err := integerLiterals(in.Event, in.Data); err != nil {
		return nil, err
	}
	id, err := h.App.Ingest(c.Context(), c.Caller(), in)
	if err != nil {
		return nil, err
	}
	return map[string]string{"event_id": id}, nil
}
