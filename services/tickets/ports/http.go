// Package ports serves triage tickets over HTTP (through the gateway) in
// the public shapes with every field of spec 2.1.
package ports

import (
	"context"
	"net/http"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Handlers serve the tickets operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

// answer is a ticket as a command or a get answers it.
func answer(t *ticketsv1.Ticket) ticketView { return viewOf(t, nil) }

func (h *Handlers) List(c *api.Call) (any, error) {
	return h.list(c, "")
}

func (h *Handlers) ListAgent(c *api.Call) (any, error) {
	agentID := c.ID()
	if err := h.App.RequireAgent(c.Context(), c.Caller().WorkspaceID, agentID); err != nil {
		return nil, err
	}
	return h.list(c, agentID)
}

// list serves a listing of the workspace, or of the agent of the path.
func (h *Handlers) list(c *api.Call, agentID string) (any, error) {
	var params app.ListParams
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	if agentID != "" {
		params.AgentID = agentID
	}
	params.Me = c.Caller().UserID // what "@me" names
	page, err := h.App.List(c.Context(), c.Caller().WorkspaceID, params)
	if err != nil {
		return nil, err
	}
	out := make([]ticketView, 0, len(page.Tickets))
	for _, row := range page.Tickets {
		out = append(out, viewOf(row.Ticket, row.Match))
	}
	return pageView{Tickets: out, NextCursor: page.NextCursor, HasMore: page.HasMore}, nil
}

func (h *Handlers) Create(c *api.Call) (any, error) {
	var in app.CreateInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	t, existing, err := h.App.Create(c.Context(), c.Caller(), in)
	if err != nil {
		return nil, err
	}
	if existing {
		return api.Status(http.StatusOK, answer(t)), nil // the report joined the conversation's open ticket
	}
	return answer(t), nil
}

func (h *Handlers) CreateAgent(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.CreateManual, answer)
}

// Get answers a ticket with the current labels of its runs and
// conversations.
func (h *Handlers) Get(c *api.Call) (any, error) {
	t, _, err := h.App.Get(c.Context(), c.Caller().WorkspaceID, c.ID())
	if err != nil {
		return nil, err
	}
	labels, err := h.App.TicketLabels(c.Context(), t)
	if err != nil {
		return nil, err
	}
	v := ticketDetailView{ticketView: answer(t), VerdictLabels: make([]wire.VerdictLabel, 0, len(labels)),
		DeletedConversations: h.deletedConversations(t)}
	for _, l := range labels {
		v.VerdictLabels = append(v.VerdictLabels, labelViewOf(l))
	}
	return v, nil
}

func (h *Handlers) Update(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.Update, answer)
}

func (h *Handlers) Delete(c *api.Call) (any, error) {
	return api.Remove(c, h.App.Delete)
}

func (h *Handlers) Comment(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.AddComment, answer)
}

func (h *Handlers) TurnComment(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.AddTurnComment, answer)
}

type mergeInput struct {
	SourceTicketIDs []string `json:"source_ticket_ids"`
}

func (h *Handlers) Merge(c *api.Call) (any, error) {
	return api.CommandOn(c, func(ctx context.Context, caller principal.Caller, target string, in mergeInput) (*ticketsv1.Ticket, error) {
		return h.App.Merge(ctx, caller, target, in.SourceTicketIDs)
	}, answer)
}

func (h *Handlers) AssignableUsers(c *api.Call) (any, error) {
	members, err := h.App.AssignableUsers(c.Context(), c.Caller().WorkspaceID, c.ID())
	if err != nil {
		return nil, err
	}
	out := make([]assignableUser, 0, len(members))
	for _, m := range members {
		name := m.Name
		out = append(out, assignableUser{UserID: m.UserID, Email: m.Email, FirstName: &name, IsServiceAccount: m.IsServiceAccount, HasAccess: !m.Locked})
	}
	return out, nil
}

type assignableUser struct {
	UserID           string  `json:"user_id"`
	Email            string  `json:"email"`
	FirstName        *string `json:"first_name"`
	IsServiceAccount bool    `json:"is_service_account"`
	HasAccess        bool    `json:"has_access"`
}

func (h *Handlers) ListConversations(c *api.Call) (any, error) {
	var params app.ConversationParams
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	page, err := h.App.ListConversations(c.Context(), c.Caller().WorkspaceID, params)
	if err != nil {
		return nil, err
	}
	out := make([]wire.ConversationRow, 0, len(page.Conversations))
	for _, conv := range page.Conversations {
		out = append(out, rowOf(conv, page.WithSummary))
	}
	return wire.ConversationPage{Conversations: out, NextCursor: page.NextCursor, HasMore: page.HasMore}, nil
}

func (h *Handlers) GetConversation(c *api.Call) (any, error) {
	conv, err := h.App.GetConversation(c.Context(), c.Caller().WorkspaceID, c.ID())
	return api.View(conv, err, detailOf)
}

func (h *Handlers) ConversationFeedback(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.GiveFeedback, func(app.ConversationSummary) struct{} { return struct{}{} })
}

func (h *Handlers) AssignConversationTags(c *api.Call) (any, error) {
	var in app.AssignTagsInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	_, err := h.App.AssignTags(c.Context(), c.Caller(), c.ID(), in)
	return nil, err
}

func (h *Handlers) UnassignConversationTag(c *api.Call) (any, error) {
	return nil, h.App.UnassignTag(c.Context(), c.Caller(), c.PathID("conversation_id"), c.PathID("tag_id"))
}

func (h *Handlers) ListTags(c *api.Call) (any, error) {
	var params app.TagListParams
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	page, err := h.App.ListTags(c.Caller().WorkspaceID, params)
	if err != nil {
		return nil, err
	}
	out := make([]tagView, 0, len(page.Tags))
	for _, t := range page.Tags {
		out = append(out, tagOf(t))
	}
	return tagPage{Tags: out, NextCursor: page.NextCursor, HasMore: page.HasMore}, nil
}

func (h *Handlers) CreateTag(c *api.Call) (any, error) {
	return api.Command(c, h.App.CreateTag, tagOf)
}

func (h *Handlers) GetTag(c *api.Call) (any, error) {
	t, err := h.App.GetTag(c.Context(), c.Caller().WorkspaceID, c.ID())
	return api.View(t, err, tagOf)
}

func (h *Handlers) UpdateTag(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.UpdateTag, tagOf)
}

func (h *Handlers) DeleteTag(c *api.Call) (any, error) {
	return api.Remove(c, h.App.DeleteTag)
}
