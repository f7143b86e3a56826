// Package ports serves triage tickets over HTTP (through the gateway) in
// the public shapes with every field of spec 2.1.
package ports

import (
	"net/http"

	"github.com/gorilla/mux"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Handlers serve the tickets operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

// answer is a ticket as a command or a get answers it.
func answer(t *ticketsv1.Ticket) ticketView { return viewOf(t, nil) }

func (h *Handlers) List(w http.ResponseWriter, r *http.Request) error {
	return h.list(w, r, "")
}

func (h *Handlers) ListAgent(w http.ResponseWriter, r *http.Request) error {
	agentID := mux.Vars(r)["agent_id"]
	if err := h.App.RequireAgent(r.Context(), principal.Of(r).WorkspaceID, agentID); err != nil {
		return err
	}
	return h.list(w, r, agentID)
}

// list serves a listing of the workspace, or of the agent of the path.
func (h *Handlers) list(w http.ResponseWriter, r *http.Request, agentID string) error {
	var params app.ListParams
	if err := api.DecodeQuery(r, &params); err != nil {
		return err
	}
	if agentID != "" {
		params.AgentID = agentID
	}
	page, err := h.App.List(r.Context(), principal.Of(r).WorkspaceID, params)
	if err != nil {
		return err
	}
	out := make([]ticketView, 0, len(page.Tickets))
	for _, row := range page.Tickets {
		out = append(out, viewOf(row.Ticket, row.Match))
	}
	httpx.WriteJSON(w, http.StatusOK, pageView{Tickets: out, NextCursor: page.NextCursor, HasMore: page.HasMore})
	return nil
}

func (h *Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var in app.CreateInput
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	t, existing, err := h.App.Create(r.Context(), api.CallerOf(r), in)
	code := http.StatusCreated
	if existing {
		code = http.StatusOK // the report joined the conversation's open ticket
	}
	return httpx.Reply(w, code, t, err, answer)
}

func (h *Handlers) CreateAgent(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusCreated, h.App.CreateManual, answer)
}

// Get answers a ticket with the current labels of its runs and
// conversations.
func (h *Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	t, _, err := h.App.Get(r.Context(), principal.Of(r).WorkspaceID, mux.Vars(r)["ticket_id"])
	if err != nil {
		return err
	}
	labels, err := h.App.TicketLabels(r.Context(), t)
	if err != nil {
		return err
	}
	v := ticketDetailView{ticketView: answer(t), VerdictLabels: make([]labelView, 0, len(labels)),
		DeletedConversations: h.deletedConversations(t)}
	for _, l := range labels {
		v.VerdictLabels = append(v.VerdictLabels, labelViewOf(l))
	}
	httpx.WriteJSON(w, http.StatusOK, v)
	return nil
}

func (h *Handlers) Update(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusOK, h.App.Update, answer)
}

func (h *Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	return api.Remove(w, r, h.App.Delete)
}

func (h *Handlers) Comment(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusOK, h.App.AddComment, answer)
}

func (h *Handlers) TurnComment(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusOK, h.App.AddTurnComment, answer)
}

type mergeInput struct {
	SourceTicketIDs []string `json:"source_ticket_ids"`
}

func (h *Handlers) Merge(w http.ResponseWriter, r *http.Request) error {
	return httpx.Command(w, r, http.StatusOK, func(in mergeInput) (*ticketsv1.Ticket, error) {
		return h.App.Merge(r.Context(), api.CallerOf(r), mux.Vars(r)["ticket_id"], in.SourceTicketIDs)
	}, answer)
}

func (h *Handlers) AssignableUsers(w http.ResponseWriter, r *http.Request) error {
	members, err := h.App.AssignableUsers(r.Context(), principal.Of(r).WorkspaceID, mux.Vars(r)["agent_id"])
	if err != nil {
		return err
	}
	out := make([]assignableUser, 0, len(members))
	for _, m := range members {
		name := m.Name
		out = append(out, assignableUser{UserID: m.UserID, Email: m.Email, FirstName: &name, IsServiceAccount: m.IsServiceAccount, HasAccess: true})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

type assignableUser struct {
	UserID           string  `json:"user_id"`
	Email            string  `json:"email"`
	FirstName        *string `json:"first_name"`
	IsServiceAccount bool    `json:"is_service_account"`
	HasAccess        bool    `json:"has_access"`
}

func (h *Handlers) ListConversations(w http.ResponseWriter, r *http.Request) error {
	var params app.ConversationParams
	if err := api.DecodeQuery(r, &params); err != nil {
		return err
	}
	page, err := h.App.ListConversations(r.Context(), principal.Of(r).WorkspaceID, params)
	if err != nil {
		return err
	}
	out := make([]wire.ConversationRow, 0, len(page.Conversations))
	for _, c := range page.Conversations {
		out = append(out, rowOf(c, page.WithSummary))
	}
	httpx.WriteJSON(w, http.StatusOK, wire.ConversationPage{Conversations: out, NextCursor: page.NextCursor, HasMore: page.HasMore})
	return nil
}

func (h *Handlers) GetConversation(w http.ResponseWriter, r *http.Request) error {
	c, err := h.App.GetConversation(r.Context(), principal.Of(r).WorkspaceID, mux.Vars(r)["conversation_id"])
	return httpx.Reply(w, http.StatusOK, c, err, detailOf)
}

func (h *Handlers) ConversationFeedback(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusOK, h.App.GiveFeedback, func(app.ConversationSummary) struct{} { return struct{}{} })
}

func (h *Handlers) AssignConversationTags(w http.ResponseWriter, r *http.Request) error {
	var in app.AssignTagsInput
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	_, err := h.App.AssignTags(r.Context(), api.CallerOf(r), mux.Vars(r)["conversation_id"], in)
	return httpx.NoContent(w, err)
}

func (h *Handlers) UnassignConversationTag(w http.ResponseWriter, r *http.Request) error {
	vars := mux.Vars(r)
	return httpx.NoContent(w, h.App.UnassignTag(r.Context(), api.CallerOf(r), vars["conversation_id"], vars["tag_id"]))
}

func (h *Handlers) ListTags(w http.ResponseWriter, r *http.Request) error {
	var params app.TagListParams
	if err := api.DecodeQuery(r, &params); err != nil {
		return err
	}
	page, err := h.App.ListTags(principal.Of(r).WorkspaceID, params)
	if err != nil {
		return err
	}
	out := make([]tagView, 0, len(page.Tags))
	for _, t := range page.Tags {
		out = append(out, tagOf(t))
	}
	httpx.WriteJSON(w, http.StatusOK, tagPage{Tags: out, NextCursor: page.NextCursor, HasMore: page.HasMore})
	return nil
}

func (h *Handlers) CreateTag(w http.ResponseWriter, r *http.Request) error {
	return api.Command(w, r, http.StatusOK, h.App.CreateTag, tagOf)
}

func (h *Handlers) GetTag(w http.ResponseWriter, r *http.Request) error {
	t, err := h.App.GetTag(r.Context(), principal.Of(r).WorkspaceID, mux.Vars(r)["tag_id"])
	return httpx.Reply(w, http.StatusOK, t, err, tagOf)
}

func (h *Handlers) UpdateTag(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusOK, h.App.UpdateTag, tagOf)
}

func (h *Handlers) DeleteTag(w http.ResponseWriter, r *http.Request) error {
	return api.Remove(w, r, h.App.DeleteTag)
}
