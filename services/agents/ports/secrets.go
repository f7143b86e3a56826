package ports

import (
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// The public shapes of workspace secrets (the SDK's
// conversationalAi.secrets): a value is taken, never answered.

type secretStored struct {
	Type     string `json:"type"`
	SecretID string `json:"secret_id"`
	Name     string `json:"name"`
}

type dependentAgent struct {
	Type              string `json:"type"`
	ID                string `json:"id"`
	Name              string `json:"name"`
	CreatedAtUnixSecs int64  `json:"created_at_unix_secs"`
	AccessLevel       string `json:"access_level"`
}

type dependencies struct {
	Tools         []struct{}       `json:"tools"`
	ToolsHasMore  bool             `json:"tools_has_more"`
	Agents        []dependentAgent `json:"agents"`
	AgentsHasMore bool             `json:"agents_has_more"`
	Others        []string         `json:"others"`
}

type secretView struct {
	secretStored
	UsedBy dependencies `json:"used_by"`
}

func secretOf(s app.Secret, p principal.Principal) secretView {
	deps := dependencies{Tools: []struct{}{}, Agents: []dependentAgent{}, Others: []string{}, AgentsHasMore: s.More}
	for _, d := range s.UsedBy {
		deps.Agents = append(deps.Agents, dependentAgent{Type: "available", ID: d.ID, Name: d.Name,
			CreatedAtUnixSecs: d.CreatedAtUnix, AccessLevel: access(d.CreatedBy, d.CreatorName, d.CreatorEmail, p).Role})
	}
	return secretView{secretStored: secretStored{Type: "stored", SecretID: s.ID, Name: s.Name}, UsedBy: deps}
}

// storedOf is a secret as its create and update answer it.
func storedOf(s *agentsv1.WorkspaceSecret) secretStored {
	return secretStored{Type: "stored", SecretID: s.GetSecretId(), Name: s.GetName()}
}

func (h *Handlers) CreateSecret(c *api.Call) (any, error) {
	return api.Command(c, h.App.CreateSecret, storedOf)
}

func (h *Handlers) UpdateSecret(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.UpdateSecret, storedOf)
}

func (h *Handlers) DeleteSecret(c *api.Call) (any, error) {
	return api.Remove(c, h.App.DeleteSecret)
}

func (h *Handlers) GetSecret(c *api.Call) (any, error) {
	var params struct {
		DependencyLimit int `json:"dependency_limit"`
	}
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	p := c.Caller().Principal
	s, err := h.App.GetSecret(c.Context(), p.WorkspaceID, c.ID(), params.DependencyLimit)
	return api.View(s, err, func(s app.Secret) secretView { return secretOf(s, p) })
}

func (h *Handlers) ListSecrets(c *api.Call) (any, error) {
	var params app.SecretListParams
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	p := c.Caller().Principal
	page, err := h.App.ListSecrets(c.Context(), p.WorkspaceID, params)
	if err != nil {
		return nil, err
	}
	out := struct {
		Secrets    []secretView `json:"secrets"`
		NextCursor *string      `json:"next_cursor"`
	}{Secrets: make([]secretView, 0, len(page.Secrets)), NextCursor: page.NextCursor}
	for _, s := range page.Secrets {
		out.Secrets = append(out.Secrets, secretOf(s, p))
	}
	return out, nil
}
