// Package ports serves agents over HTTP (through the gateway) in the
// public shapes, with the spec's fields (id, name, created_at_unix).
package ports

import (
	"encoding/json"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// Handlers serve the agents operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

func (h *Handlers) Create(c *api.Call) (any, error) {
	var in app.CreateInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	ag, err := h.App.Create(c.Context(), c.Caller(), in)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"agent_id": ag.GetAgentId(), "id": ag.GetAgentId(), "name": ag.GetName(), "created_at_unix": ag.GetCreatedAtUnix(),
	}, nil
}

// ListAlias is GET .../agents/list, the same listing.
func (h *Handlers) ListAlias(c *api.Call) (any, error) { return h.List(c) }

func (h *Handlers) Get(c *api.Call) (any, error) {
	ag, _, err := h.App.Agents.Get(c.Context(), c.Caller().WorkspaceID, c.ID())
	return api.View(ag, err, func(a *agentsv1.Agent) agentResponse { return agentView(a, c.Caller().Principal) })
}

func (h *Handlers) Update(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.Update, func(a *agentsv1.Agent) agentResponse { return agentView(a, c.Caller().Principal) })
}

func (h *Handlers) Delete(c *api.Call) (any, error) {
	return api.Remove(c, h.App.Delete)
}

func (h *Handlers) List(c *api.Call) (any, error) {
	var params app.ListParams
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	p := c.Caller().Principal
	page, err := h.App.List(c.Context(), p.WorkspaceID, p.UserID, params)
	if err != nil {
		return nil, err
	}
	out := make([]summary, 0, len(page.Agents))
	for _, d := range page.Agents {
		out = append(out, summaryOf(d, p))
	}
	return listPage{Agents: out, NextCursor: page.NextCursor, HasMore: page.HasMore}, nil
}

// Summaries is GET .../agents/summaries: by each agent id asked for, the
// agent as the listing shows it, or the error a GET of it would answer.
func (h *Handlers) Summaries(c *api.Call) (any, error) {
	var q struct {
		AgentIDs []string `json:"agent_ids"`
	}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	p := c.Caller().Principal
	found, missing, err := h.App.Summaries(c.Context(), p.WorkspaceID, q.AgentIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]summaryResult, len(found)+len(missing))
	for _, d := range found {
		s := summaryOf(d, p)
		out[d.ID] = summaryResult{Status: "success", Data: &s}
	}
	for _, id := range missing {
		e := apperr.AgentNotFound
		out[id] = summaryResult{Status: "failure", ErrorCode: api.StatusOf(e), ErrorStatus: e.Status, ErrorMessage: e.Message}
	}
	return out, nil
}

// summaryResult is one agent of a summaries answer: its summary
// (success), or why there is none (failure).
type summaryResult struct {
	Status       string   `json:"status"`
	Data         *summary `json:"data,omitempty"`
	ErrorCode    int      `json:"error_code,omitempty"`
	ErrorStatus  string   `json:"error_status,omitempty"`
	ErrorMessage string   `json:"error_message,omitempty"`
}

type accessInfo struct {
	IsCreator    bool   `json:"is_creator"`
	CreatorName  string `json:"creator_name"`
	CreatorEmail string `json:"creator_email"`
	Role         string `json:"role"`
	AccessSource string `json:"access_source"`
}

func access(creatorID, creatorName, creatorEmail string, p principal.Principal) accessInfo {
	ai := accessInfo{IsCreator: creatorID == p.UserID, CreatorName: creatorName, CreatorEmail: creatorEmail, Role: "viewer", AccessSource: "workspace_default"}
	switch {
	case ai.IsCreator:
		ai.Role, ai.AccessSource = "admin", "creator"
	case p.IsAdmin():
		ai.Role, ai.AccessSource = "admin", "workspace_admin"
	case p.Has("convai_write"):
		ai.Role = "editor"
	}
	return ai
}

type metadata struct {
	CreatedAtUnixSecs int64 `json:"created_at_unix_secs"`
	UpdatedAtUnixSecs int64 `json:"updated_at_unix_secs"`
}

type agentResponse struct {
	AgentID            string          `json:"agent_id"`
	ID                 string          `json:"id"`
	Name               string          `json:"name"`
	SystemPrompt       string          `json:"system_prompt"`
	AgentType          *string         `json:"agent_type"`
	ConversationConfig json.RawMessage `json:"conversation_config"`
	Metadata           metadata        `json:"metadata"`
	PlatformSettings   json.RawMessage `json:"platform_settings"`
	Workflow           json.RawMessage `json:"workflow,omitempty"`
	Tags               []string        `json:"tags"`
	AccessInfo         accessInfo      `json:"access_info"`
	CreatedAtUnix      int64           `json:"created_at_unix"`
}

func agentView(a *agentsv1.Agent, p principal.Principal) agentResponse {
	v := agentResponse{
		AgentID: a.GetAgentId(), ID: a.GetAgentId(), Name: a.GetName(), SystemPrompt: a.GetSystemPrompt(),
		ConversationConfig: a.GetConversationConfigJson(), PlatformSettings: a.GetPlatformSettingsJson(),
		Workflow: a.GetWorkflowJson(), Tags: a.GetTags(), CreatedAtUnix: a.GetCreatedAtUnix(),
		Metadata:   metadata{CreatedAtUnixSecs: a.GetCreatedAtUnix(), UpdatedAtUnixSecs: a.GetUpdatedAtUnix()},
		AccessInfo: access(a.GetCreatedByUserId(), a.GetCreatedByName(), a.GetCreatedByEmail(), p),
	}
	if a.GetAgentType() != "" {
		t := a.GetAgentType()
		v.AgentType = &t
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	return v
}

type summary struct {
	AgentID           string     `json:"agent_id"`
	Name              string     `json:"name"`
	VoiceID           string     `json:"voice_id"`
	Tags              []string   `json:"tags"`
	CreatedAtUnixSecs int64      `json:"created_at_unix_secs"`
	AccessInfo        accessInfo `json:"access_info"`
	LastCallTimeUnix  *int64     `json:"last_call_time_unix_secs"`
	Archived          bool       `json:"archived"`
}

type listPage struct {
	Agents     []summary `json:"agents"`
	NextCursor *string   `json:"next_cursor"`
	HasMore    bool      `json:"has_more"`
}

func summaryOf(d app.AgentDoc, p principal.Principal) summary {
	tags := d.Tags
	if tags == nil {
		tags = []string{}
	}
	return summary{
		AgentID: d.ID, Name: d.Name, VoiceID: d.VoiceID, Tags: tags, CreatedAtUnixSecs: d.CreatedAtUnix,
		AccessInfo: access(d.CreatedBy, d.CreatorName, d.CreatorEmail, p), LastCallTimeUnix: d.LastCallUnix, Archived: d.Archived,
	}
}
