package app

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// SecretInput is a create or an update: name and value (the schema
// bounds both; an update may leave either out).
type SecretInput struct {
	Name  *string `json:"name"`
	Value *string `json:"value"`
}

// Secret is a workspace secret as answered: never its value.
type Secret struct {
	ID, Name string
	// UsedBy are the live agents that use it (at most the limit asked),
	// More whether there are others.
	UsedBy []AgentDoc
	More   bool
}

// CreateSecret seals the value and appends SecretCreated. With a command
// id a retried create answers the first one.
func (a *App) CreateSecret(ctx context.Context, caller principal.Caller, in SecretInput) (*agentsv1.WorkspaceSecret, error) {
	commandID := caller.CommandID
	var v apperr.Validator
	v.Check(in.Name != nil && strings.TrimSpace(*in.Name) != "", "Field required", "missing", "body", "name")
	v.Check(in.Value != nil && *in.Value != "", "Field required", "missing", "body", "value")
	if err := v.Err(); err != nil {
		return nil, err
	}
	id := ids.New("secret")
	if commandID != "" {
		id = "secret_" + esproto.StableID(caller.WorkspaceID, commandID)
	}
	sealed, err := a.Sealer.Seal(agentconfig.SecretOwner(caller.WorkspaceID, id), *in.Value)
	if err != nil {
		return nil, err
	}
	now := a.Now().Unix()
	s := &agentsv1.WorkspaceSecret{
		SecretId: id, WorkspaceId: caller.WorkspaceID, Name: strings.TrimSpace(*in.Name), SealedValue: sealed,
		CreatedByUserId: caller.UserID, CreatedAtUnix: now, UpdatedAtUnix: now,
	}
	meta := esproto.Meta(ctx, caller.WorkspaceID, commandID, a.Now())
	created, _, err := a.Secrets.Create(ctx, caller.WorkspaceID, id, meta, &agentsv1.SecretCreated{Meta: meta, Secret: s}, s)
	return created, err
}

// UpdateSecret renames the secret or replaces its value. With a command
// id a replay answers the first result.
func (a *App) UpdateSecret(ctx context.Context, caller principal.Caller, secretID string, in SecretInput) (*agentsv1.WorkspaceSecret, error) {
	workspaceID, commandID := caller.WorkspaceID, caller.CommandID
	return a.Secrets.Update(ctx, workspaceID, secretID, commandID, func(next *agentsv1.WorkspaceSecret, meta *commonv1.EventMeta) (proto.Message, error) {
		var changed []string
		if in.Name != nil {
			if name := strings.TrimSpace(*in.Name); name != next.Name {
				next.Name, changed = name, append(changed, "name")
			}
		}
		if in.Value != nil {
			// A new value is always a change: the old one cannot be
			// compared without opening it, and a rotation to the same
			// value is harmless.
			sealed, err := a.Sealer.Seal(agentconfig.SecretOwner(workspaceID, secretID), *in.Value)
			if err != nil {
				return nil, err
			}
			next.SealedValue, changed = sealed, append(changed, "value")
		}
		if len(changed) == 0 {
			return nil, nil
		}
		return &agentsv1.SecretUpdated{Meta: meta, Secret: next, ChangedFields: changed}, nil
	})
}

// DeleteSecret deletes a secret no live agent uses. The secret's own
// list of the agents bound to it decides, on the version the deletion is
// stored over, so no agent can start using it meanwhile
// (bindingSteps); the read model answers for agents bound before the
// list was kept.
func (a *App) DeleteSecret(ctx context.Context, caller principal.Caller, secretID string) error {
	workspaceID, commandID := caller.WorkspaceID, caller.CommandID
	_, err := a.Secrets.Update(ctx, workspaceID, secretID, commandID, func(next *agentsv1.WorkspaceSecret, meta *commonv1.EventMeta) (proto.Message, error) {
		if len(next.BoundAgentIds) > 0 {
			return nil, secretInUse(next.BoundAgentIds)
		}
		users, err := a.SecretsRM.AgentsUsing(ctx, workspaceID, secretID, inUseNamed+1)
		if err != nil {
			return nil, err
		}
		if len(users) > 0 {
			agentIDs := make([]string, len(users))
			for i, u := range users {
				agentIDs[i] = u.ID
			}
			return nil, secretInUse(agentIDs)
		}
		now := a.Now().Unix()
		next.DeletedAtUnix = &now
		return &agentsv1.SecretDeleted{Meta: meta, Secret: next}, nil
	})
	return err
}

// inUseNamed is how many of the agents using a secret its deletion's 409
// names.
const inUseNamed = 5

// secretInUse is the 409 of a secret the agents agentIDs use: the first
// inUseNamed of them, and whether more do.
func secretInUse(agentIDs []string) error {
	n := min(len(agentIDs), inUseNamed)
	return apperr.SecretInUse(slices.Clone(agentIDs[:n]), len(agentIDs) > n)
}

// GetSecret returns a live secret with up to dependencyLimit agents that
// use it.
func (a *App) GetSecret(ctx context.Context, workspaceID, secretID string, dependencyLimit int) (Secret, error) {
	limit := dependencies(dependencyLimit)
	s, _, err := a.Secrets.Get(ctx, workspaceID, secretID)
	if err != nil {
		return Secret{}, err
	}
	out := Secret{ID: s.GetSecretId(), Name: s.GetName()}
	return out, a.usedBy(ctx, workspaceID, &out, limit)
}

func (a *App) usedBy(ctx context.Context, workspaceID string, s *Secret, limit int) error {
	users, err := a.SecretsRM.AgentsUsing(ctx, workspaceID, s.ID, limit+1)
	if err != nil {
		return err
	}
	if len(users) > limit {
		users, s.More = users[:limit], true
	}
	s.UsedBy = users
	return nil
}

// SecretPage is one page of the secret listing.
type SecretPage struct {
	Secrets    []Secret
	NextCursor *string
}

// SecretListParams are the listing's query parameters, decoded and
// checked against the document at the edge (api.DecodeQuery).
type SecretListParams struct {
	PageSize        int    `json:"page_size"` // 0: the default, 100
	Search          string `json:"search"`
	Cursor          string `json:"cursor"`
	DependencyLimit int    `json:"dependency_limit"` // 0: the default, 10
}

// ListSecrets returns one page of the workspace's secrets by name, each
// with the agents that use it: a page costs one query, and one per
// secret shown.
func (a *App) ListSecrets(ctx context.Context, workspaceID string, p SecretListParams) (SecretPage, error) {
	limit, deps := cmp.Or(p.PageSize, 100), dependencies(p.DependencyLimit)
	search := strings.TrimSpace(p.Search)
	scope := cursor.Scope("secrets", workspaceID, strings.ToLower(search))
	after, err := cursor.After[SecretPosition](a.Cursors, scope, p.Cursor)
	if err != nil {
		return SecretPage{}, err
	}
	docs, err := a.SecretsRM.ListSecrets(ctx, workspaceID, search, after, limit+1)
	if err != nil {
		return SecretPage{}, err
	}
	var page SecretPage
	if len(docs) > limit {
		docs = docs[:limit]
		last := docs[limit-1]
		if page.NextCursor, err = cursor.Next(a.Cursors, scope, SecretPosition{Name: last.NameLower, ID: last.ID}); err != nil {
			return SecretPage{}, err
		}
	}
	page.Secrets = make([]Secret, 0, len(docs))
	for _, d := range docs {
		s := Secret{ID: d.ID, Name: d.Name}
		if err := a.usedBy(ctx, workspaceID, &s, deps); err != nil {
			return SecretPage{}, err
		}
		page.Secrets = append(page.Secrets, s)
	}
	return page, nil
}

// dependencies is how many agents to show with a secret: 10 unless asked
// (dependency_limit, 1 to 100 by the document).
func dependencies(asked int) int { return cmp.Or(asked, 10) }
