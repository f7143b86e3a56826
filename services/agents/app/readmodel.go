package app

import (
	"cmp"
	"context"
	"strings"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/services/agents/domain"
)

// ReadModel is what the agent listing reads; the MongoDB collection and
// the in-memory listing (adapters) implement it and pass readmodeltest.
type ReadModel interface {
	// Apply records agent state as of stream sequence seq; an older or
	// equal seq is ignored.
	Apply(ctx context.Context, seq uint64, a *agentsv1.Agent) error
	// List returns up to q.Limit live agents after q.After, in q's order.
	List(ctx context.Context, q Query) ([]AgentDoc, error)
}

// SecretReadModel is what the secret use cases read.
type SecretReadModel interface {
	ListSecrets(ctx context.Context, workspaceID, prefix string, after *SecretPosition, limit int) ([]SecretDoc, error)
	AgentsUsing(ctx context.Context, workspaceID, secretID string, limit int) ([]AgentDoc, error)
	Apply(ctx context.Context, seq uint64, s *agentsv1.WorkspaceSecret) error
}

// AgentDoc is an agent as listed.
type AgentDoc struct {
	ID            string   `bson:"_id"`
	WorkspaceID   string   `bson:"workspace_id"`
	Name          string   `bson:"name"`
	NameLower     string   `bson:"name_lower"`
	Tags          []string `bson:"tags"`
	VoiceID       string   `bson:"voice_id"`
	CreatedAtUnix int64    `bson:"created_at_unix"`
	// CreatedAtUnixNanos orders the agents of one second (0: created
	// before it was kept; those are the second's earliest, by id).
	CreatedAtUnixNanos int64  `bson:"created_at_unix_nanos"`
	CreatedBy          string `bson:"created_by_user_id"`
	CreatorEmail       string `bson:"creator_email"`
	CreatorName        string `bson:"creator_name"`
	Archived           bool   `bson:"archived"`
	Deleted            bool   `bson:"deleted"`
	UpdatedAtUnix      int64  `bson:"updated_at_unix"`
	// LastCallUnix is not stored here: a listing sets it from the call log.
	LastCallUnix *int64 `bson:"-"`
	// SecretIDs are the workspace secrets its configuration uses.
	SecretIDs []string `bson:"secret_ids"`
}

// CompareCreated orders agents by creation: second, nanosecond, id.
func CompareCreated(a, b AgentDoc) int {
	return cmp.Or(cmp.Compare(a.CreatedAtUnix, b.CreatedAtUnix), cmp.Compare(a.CreatedAtUnixNanos, b.CreatedAtUnixNanos), strings.Compare(a.ID, b.ID))
}

// DocOf maps agent state to its listed form.
func DocOf(a *agentsv1.Agent) AgentDoc {
	return AgentDoc{
		ID: a.GetAgentId(), WorkspaceID: a.GetWorkspaceId(), Name: a.GetName(), NameLower: strings.ToLower(a.GetName()),
		Tags: nonNil(a.GetTags()), VoiceID: domain.VoiceIDOf(a.GetConversationConfigJson()),
		CreatedAtUnix: a.GetCreatedAtUnix(), CreatedAtUnixNanos: a.GetCreatedAtUnixNanos(), CreatedBy: a.GetCreatedByUserId(),
		CreatorEmail: a.GetCreatedByEmail(), CreatorName: a.GetCreatedByName(),
		Archived: domain.ArchivedOf(a.GetPlatformSettingsJson()), Deleted: a.DeletedAtUnix != nil,
		UpdatedAtUnix: a.GetUpdatedAtUnix(), SecretIDs: nonNil(agentconfig.Parse(a.GetConversationConfigJson()).SecretIDs()),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Query is one page request of the agent listing.
type Query struct {
	WorkspaceID string
	Search      string
	Tags        []string
	Archived    *bool
	CreatedBy   string
	SortBy      string // "created_at" or "name"
	Descending  bool
	After       *Position
	Limit       int
}

// Position is where a page ends: the sort value and the id. Creation
// order is by second, then nanosecond (none in a cursor made before it was
// kept), then id.
type Position struct {
	Created      int64  `json:"c,omitempty"`
	CreatedNanos int64  `json:"t,omitempty"`
	Name         string `json:"n,omitempty"`
	ID           string `json:"i"`
}

// PositionOf is the position of d in q's order.
func PositionOf(q Query, d AgentDoc) Position {
	if q.SortBy == "name" {
		return Position{Name: d.NameLower, ID: d.ID}
	}
	return Position{Created: d.CreatedAtUnix, CreatedNanos: d.CreatedAtUnixNanos, ID: d.ID}
}

// SecretDoc is a workspace secret as listed.
type SecretDoc struct {
	ID            string `bson:"_id"`
	WorkspaceID   string `bson:"workspace_id"`
	Name          string `bson:"name"`
	NameLower     string `bson:"name_lower"`
	CreatedAtUnix int64  `bson:"created_at_unix"`
	UpdatedAtUnix int64  `bson:"updated_at_unix"`
	Deleted       bool   `bson:"deleted"`
}

// SecretDocOf maps secret state to its listed form: the sealed value
// stays on the bus.
func SecretDocOf(s *agentsv1.WorkspaceSecret) SecretDoc {
	return SecretDoc{
		ID: s.GetSecretId(), WorkspaceID: s.GetWorkspaceId(), Name: s.GetName(), NameLower: strings.ToLower(s.GetName()),
		CreatedAtUnix: s.GetCreatedAtUnix(), UpdatedAtUnix: s.GetUpdatedAtUnix(), Deleted: s.DeletedAtUnix != nil,
	}
}

// SecretPosition is where a page of secrets ends.
type SecretPosition struct {
	Name string `json:"n"`
	ID   string `json:"i"`
}
