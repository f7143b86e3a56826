// Package ports serves the webhooks API over HTTP (through the gateway):
// management (spec 4.6), the delivery log (6.4), health, test deliveries,
// and the platform-event ingestion endpoint.
package ports

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Permissions, checked by the gateway and again here.
var (
	ReadPerms   = []string{"convai_read", "webhooks_write"}
	WritePerms  = []string{"webhooks_write"}
	IngestPerms = []string{"convai_write"}
)

// HeaderIdempotencyKey makes a create or an ingestion safe to retry.
const HeaderIdempotencyKey = "Idempotency-Key"

// MaxIngestBody bounds an ingested event (256 KiB).
const MaxIngestBody = 256 << 10

type handlers struct{ app *app.App }

// Router returns the webhooks routes.
func Router(a *app.App) *mux.Router {
	h := &handlers{app: a}
	r := mux.NewRouter()
	r.HandleFunc("/v1/convai/webhooks", guard(ReadPerms, h.list)).Methods(http.MethodGet)
	r.HandleFunc("/v1/convai/webhooks", guard(WritePerms, h.create)).Methods(http.MethodPost)
	r.HandleFunc("/v1/convai/webhooks/{webhook_id}", guard(ReadPerms, h.get)).Methods(http.MethodGet)
	r.HandleFunc("/v1/convai/webhooks/{webhook_id}", guard(WritePerms, h.update)).Methods(http.MethodPut)
	r.HandleFunc("/v1/convai/webhooks/{webhook_id}", guard(WritePerms, h.delete)).Methods(http.MethodDelete)
	r.HandleFunc("/v1/voiceai/webhooks/health", guard(ReadPerms, h.health)).Methods(http.MethodGet)
	r.HandleFunc("/v1/voiceai/webhooks/{webhook_id}/test", guard(WritePerms, h.test)).Methods(http.MethodPost)
	r.HandleFunc("/v1/voiceai/webhooks/{webhook_id}/logs", guard(ReadPerms, h.logs)).Methods(http.MethodGet)
	r.HandleFunc("/v1/convai/events", guard(IngestPerms, h.ingest)).Methods(http.MethodPost)
	return r
}

func guard(perms []string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := principal.Require(r, perms...); err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		next(w, r)
	}
}

func caller(r *http.Request) principal.Principal {
	p, _ := principal.From(r.Context())
	return p
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) {
	hooks := h.app.List(caller(r).WorkspaceID)
	out := make([]webhookView, 0, len(hooks))
	for _, wh := range hooks {
		out = append(out, viewOf(wh, nil))
	}
	httpx.WriteJSON(w, http.StatusOK, listView{Webhooks: out, Pagination: pagination{HasMore: false, NextCursor: nil, TotalCount: len(out)}})
}

// reply writes a webhook (with its secret, when shown), or the error.
func reply(w http.ResponseWriter, r *http.Request, code int, wh *webhooksv1.Webhook, secret *string, err error) {
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, code, viewOf(wh, secret))
}

func (h *handlers) get(w http.ResponseWriter, r *http.Request) {
	wh, err := h.app.Get(caller(r).WorkspaceID, mux.Vars(r)["webhook_id"])
	reply(w, r, http.StatusOK, wh, nil, err)
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) {
	in, err := DecodeInput(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	wh, secret, err := h.app.Create(r.Context(), caller(r), in, r.Header.Get(HeaderIdempotencyKey))
	reply(w, r, http.StatusCreated, wh, &secret, err)
}

func (h *handlers) update(w http.ResponseWriter, r *http.Request) {
	in, err := DecodeInput(r)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	wh, err := h.app.Update(r.Context(), caller(r), mux.Vars(r)["webhook_id"], in, r.Header.Get(HeaderIdempotencyKey))
	reply(w, r, http.StatusOK, wh, nil, err)
}

func (h *handlers) delete(w http.ResponseWriter, r *http.Request) {
	if err := h.app.Delete(r.Context(), caller(r), mux.Vars(r)["webhook_id"]); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handlers) test(w http.ResponseWriter, r *http.Request) {
	var in struct {
		EventType string `json:"event_type"`
	}
	if err := httpx.DecodeJSON(r, 0, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	att, err := h.app.Test(r.Context(), caller(r), mux.Vars(r)["webhook_id"], in.EventType)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, testViewOf(att))
}

func (h *handlers) logs(w http.ResponseWriter, r *http.Request) {
	limit := app.DefaultLogLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > app.MaxLogLimit {
			httpx.WriteError(w, r, httpx.ValidationErrors{{Loc: []any{"query", "limit"}, Msg: "Input should be an integer between 1 and " + strconv.Itoa(app.MaxLogLimit), Type: "range"}})
			return
		}
		limit = n
	}
	id := mux.Vars(r)["webhook_id"]
	atts, err := h.app.Logs(caller(r).WorkspaceID, id, limit)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	out := logsView{WebhookID: id, RecentDeliveries: make([]logEntry, 0, len(atts))}
	for _, a := range atts {
		out.RecentDeliveries = append(out.RecentDeliveries, logEntryOf(a))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (h *handlers) health(w http.ResponseWriter, r *http.Request) {
	rows, err := h.app.Health(r.Context(), caller(r).WorkspaceID)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	out := healthView{Webhooks: make([]webhookHealth, 0, len(rows))}
	for _, row := range rows {
		out.Webhooks = append(out.Webhooks, healthOf(row))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (h *handlers) ingest(w http.ResponseWriter, r *http.Request) {
	var in domain.IngestInput
	if err := httpx.DecodeJSON(r, MaxIngestBody, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	id, err := h.app.Ingest(r.Context(), caller(r).WorkspaceID, in, r.Header.Get(HeaderIdempotencyKey))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, map[string]string{"event_id": id})
}

// DecodeInput reads a create or update body.
func DecodeInput(r *http.Request) (domain.Input, error) {
	var in domain.Input
	err := httpx.DecodeJSON(r, 0, &in)
	return in, err
}
