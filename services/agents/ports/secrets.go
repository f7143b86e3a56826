package ports

import (
	"net/http"

	"github.com/gorilla/mux"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
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

func (h *Handlers) CreateSecret(w http.ResponseWriter, r *http.Request) error {
	return api.Command(w, r, http.StatusOK, h.App.CreateSecret, storedOf)
}

func (h *Handlers) UpdateSecret(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusOK, h.App.UpdateSecret, storedOf)
}

func (h *Handlers) DeleteSecret(w http.ResponseWriter, r *http.Request) error {
	return api.Remove(w, r, h.App.DeleteSecret)
}

func (h *Handlers) GetSecret(w http.ResponseWriter, r *http.Request) error {
	var params struct {
		DependencyLimit int `json:"dependency_limit"`
	}
	if err := api.DecodeQuery(r, &params); err != nil {
		return err
	}
	s, err := h.App.GetSecret(r.Context(), principal.Of(r).WorkspaceID, mux.Vars(r)["secret_id"], params.DependencyLimit)
	return httpx.Reply(w, http.StatusOK, s, err, func(s app.Secret) secretView { return secretOf(s, principal.Of(r)) })
}

func (h *Handlers) ListSecrets(w http.ResponseWriter, r *http.Request) error {
	var params app.SecretListParams
	if err := api.DecodeQuery(r, &params); err != nil {
		return err
	}
	page, err := h.App.ListSecrets(r.Context(), principal.Of(r).WorkspaceID, params)
	if err != nil {
		return err
	}
	out := struct {
		Secrets    []secretView `json:"secrets"`
		NextCursor *string      `json:"next_cursor"`
	}{Secrets: make([]secretView, 0, len(page.Secrets)), NextCursor: page.NextCursor}
	for _, s := range page.Secrets {
		out.Secrets = append(out.Secrets, secretOf(s, principal.Of(r)))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
