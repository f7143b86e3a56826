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
	"net/http"
	"time"

	"github.com/gorilla/mux"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Handlers serve the webhooks operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

func (h *Handlers) List(w http.ResponseWriter, r *http.Request) error {
	hooks := h.App.List(principal.Of(r).WorkspaceID)
	out := make([]webhookView, 0, len(hooks))
	for _, wh := range hooks {
		out = append(out, viewOf(wh, nil, h.App.RunOf(wh)))
	}
	httpx.WriteJSON(w, http.StatusOK, listView{Webhooks: out, Pagination: pagination{HasMore: false, NextCursor: nil, TotalCount: len(out)}})
	return nil
}

// reply writes a webhook (with its secret, when shown), or returns the
// error.
func (h *Handlers) reply(w http.ResponseWriter, code int, wh *webhooksv1.Webhook, secret *string, err error) error {
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, code, viewOf(wh, secret, h.App.RunOf(wh)))
	return nil
}

func (h *Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	wh, err := h.App.Get(principal.Of(r).WorkspaceID, mux.Vars(r)["webhook_id"])
	return h.reply(w, http.StatusOK, wh, nil, err)
}

func (h *Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	in, err := DecodeInput(r)
	if err != nil {
		return err
	}
	wh, secret, err := h.App.Create(r.Context(), api.CallerOf(r), in)
	return h.reply(w, http.StatusCreated, wh, &secret, err)
}

func (h *Handlers) Update(w http.ResponseWriter, r *http.Request) error {
	in, err := DecodeInput(r)
	if err != nil {
		return err
	}
	wh, err := h.App.Update(r.Context(), api.CallerOf(r), mux.Vars(r)["webhook_id"], in)
	return h.reply(w, http.StatusOK, wh, nil, err)
}

func (h *Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	return api.Remove(w, r, h.App.Delete)
}

type testInput struct {
	EventType string `json:"event_type"`
}

func (h *Handlers) Test(w http.ResponseWriter, r *http.Request) error {
	return httpx.Command(w, r, http.StatusOK, func(in testInput) (*webhooksv1.DeliveryAttempt, error) {
		return h.App.Test(r.Context(), api.CallerOf(r), mux.Vars(r)["webhook_id"], in.EventType)
	}, testViewOf)
}

func (h *Handlers) Logs(w http.ResponseWriter, r *http.Request) error {
	// The edge has checked the query against the parameters' schemas
	// (limit's range, the event and status enums, the times' range).
	var q struct {
		Limit     int    `json:"limit"`
		Event     string `json:"event"`
		Status    string `json:"status"`
		StartTime int64  `json:"start_time"` // unix seconds
		EndTime   int64  `json:"end_time"`
	}
	if err := api.DecodeQuery(r, &q); err != nil {
		return err
	}
	limit := app.DefaultLogLimit
	if q.Limit > 0 {
		limit = q.Limit
	}
	f := domain.LogFilter{Event: q.Event, Status: q.Status, FromMs: q.StartTime * 1000, ToMs: q.EndTime * 1000}
	id := mux.Vars(r)["webhook_id"]
	atts, err := h.App.Logs(r.Context(), principal.Of(r).WorkspaceID, id, f, limit)
	if err != nil {
		return err
	}
	out := logsView{WebhookID: id, RecentDeliveries: make([]logEntry, 0, len(atts))}
	for _, a := range atts {
		out.RecentDeliveries = append(out.RecentDeliveries, logEntryOf(a))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// catalog lists every subscribable event with the JSON Schema of its
// data, taken from the API's OpenAPI document.
func (h *Handlers) EventCatalog(w http.ResponseWriter, r *http.Request) error {
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
				return err
			}
			x.DataSchema = s
		}
		out.Events = append(out.Events, x)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handlers) Resend(w http.ResponseWriter, r *http.Request) error {
	vars := mux.Vars(r)
	res, err := h.App.Resend(r.Context(), api.CallerOf(r), vars["webhook_id"], vars["delivery_id"])
	return httpx.Reply(w, http.StatusAccepted, res, err, resentViewOf)
}

func (h *Handlers) Recover(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		StartTime *int64  `json:"start_time"`
		EndTime   *int64  `json:"end_time"`
		Event     *string `json:"event"`
	}
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	// Types, ranges and the event's name are the schema's (Recover),
	// checked at the edge; the order of the two times is this handler's.
	f := domain.LogFilter{FromMs: *in.StartTime * 1000}
	if in.EndTime != nil {
		if *in.EndTime <= *in.StartTime {
			return httpx.ValidationErrors{{Loc: []any{"body", "end_time"}, Msg: "Input should be a Unix time in seconds after start_time", Type: "value_error"}}
		}
		f.ToMs = *in.EndTime * 1000
	}
	if in.Event != nil {
		f.Event = *in.Event
	}
	resent, more, err := h.App.Recover(r.Context(), api.CallerOf(r), mux.Vars(r)["webhook_id"], f)
	if err != nil {
		return err
	}
	out := recoveredView{Deliveries: make([]resentView, 0, len(resent)), HasMore: more}
	for _, x := range resent {
		out.Deliveries = append(out.Deliveries, resentViewOf(x))
	}
	out.RecoveredCount = len(out.Deliveries)
	httpx.WriteJSON(w, http.StatusAccepted, out)
	return nil
}

func (h *Handlers) RelayNext(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		WaitMs *int64 `json:"wait_ms"`
	}
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	wait := app.MaxRelayWait
	if in.WaitMs != nil { // 0 to MaxRelayWait, as the schema (RelayPoll) says
		wait = time.Duration(*in.WaitMs) * time.Millisecond
	}
	d, err := h.App.RelayNext(r.Context(), api.CallerOf(r), mux.Vars(r)["webhook_id"], wait)
	if err != nil {
		return err
	}
	var out wire.RelayNext
	if d != nil {
		out.Delivery = &wire.RelayDelivery{Token: d.Token, Headers: d.Headers, Body: string(d.Body)}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handlers) RelayResult(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Token        *string `json:"token"`
		StatusCode   *int    `json:"status_code"`
		ResponseBody string  `json:"response_body"`
		Error        string  `json:"error"`
	}
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	// The schema (RelayResult) requires both, and bounds them: the token's
	// length, the status 0 or 100 to 599.
	return httpx.NoContent(w, h.App.RelayResult(r.Context(), api.CallerOf(r), mux.Vars(r)["webhook_id"], *in.Token, *in.StatusCode, []byte(in.ResponseBody), in.Error))
}

func (h *Handlers) Health(w http.ResponseWriter, r *http.Request) error {
	rows, err := h.App.Health(r.Context(), principal.Of(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := healthView{Webhooks: make([]webhookHealth, 0, len(rows))}
	for _, row := range rows {
		out.Webhooks = append(out.Webhooks, healthOf(row))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handlers) Ingest(w http.ResponseWriter, r *http.Request) error {
	var in domain.IngestInput
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if err := integerLiterals(in.Event, in.Data); err != nil {
		return err
	}
	id, err := h.App.Ingest(r.Context(), api.CallerOf(r), in)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusAccepted, map[string]string{"event_id": id})
	return nil
}

// DecodeInput reads a create or update body.
func DecodeInput(r *http.Request) (domain.Input, error) {
	var in domain.Input
	err := httpx.DecodeJSON(r, &in)
	return in, err
}
