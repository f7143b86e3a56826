// Package adapters connects agents to its stores: the AGENTS stream and
// the Mongo read model that serves listings.
package adapters

import (
	"context"
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/agents/domain"
)

// AgentsCollection is the listing read model.
const AgentsCollection = "agents"

// AgentDoc is an agent as listed.
type AgentDoc struct {
	ID            string   `bson:"_id"`
	WorkspaceID   string   `bson:"workspace_id"`
	Name          string   `bson:"name"`
	NameLower     string   `bson:"name_lower"`
	Tags          []string `bson:"tags"`
	VoiceID       string   `bson:"voice_id"`
	CreatedAtUnix int64    `bson:"created_at_unix"`
	CreatedBy     string   `bson:"created_by_user_id"`
	CreatorEmail  string   `bson:"creator_email"`
	CreatorName   string   `bson:"creator_name"`
	Archived      bool     `bson:"archived"`
	Deleted       bool     `bson:"deleted"`
	LastCallUnix  *int64   `bson:"last_call_time_unix_secs"`
	UpdatedAtUnix int64    `bson:"updated_at_unix"`
	// SecretIDs are the workspace secrets its configuration uses.
	SecretIDs []string `bson:"secret_ids"`
}

// DocOf maps agent state to its listed form.
func DocOf(a *agentsv1.Agent) AgentDoc {
	return AgentDoc{
		ID: a.GetAgentId(), WorkspaceID: a.GetWorkspaceId(), Name: a.GetName(), NameLower: strings.ToLower(a.GetName()),
		Tags: nonNil(a.GetTags()), VoiceID: domain.VoiceIDOf(a.GetConversationConfigJson()),
		CreatedAtUnix: a.GetCreatedAtUnix(), CreatedBy: a.GetCreatedByUserId(),
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

// StateOf extracts agent state from any agent event.
func StateOf(msg proto.Message) *agentsv1.Agent {
	switch ev := msg.(type) {
	case *agentsv1.AgentCreated:
		return ev.GetAgent()
	case *agentsv1.AgentUpdated:
		return ev.GetAgent()
	case *agentsv1.AgentDeleted:
		return ev.GetAgent()
	}
	return nil
}

// ReadModel serves agent listings.
type ReadModel struct{ Agents *mongo.Collection }

// NewReadModel opens the collection and creates the indexes of every
// listing shape.
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	c := db.Collection(AgentsCollection)
	err := mongox.EnsureIndexes(ctx, c,
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "created_at_unix", Value: -1}, {Key: "_id", Value: -1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "name_lower", Value: 1}, {Key: "_id", Value: 1}}},
	)
	if err != nil {
		return nil, err
	}
	return &ReadModel{Agents: c}, nil
}

// Apply writes agent state as of stream sequence seq.
func (rm *ReadModel) Apply(ctx context.Context, seq uint64, a *agentsv1.Agent) error {
	_, err := projection.Upsert(ctx, rm.Agents, a.GetAgentId(), seq, DocOf(a))
	return err
}

// Handler is the projection handler for the AGENTS stream.
func Handler(_ context.Context, rec eventstore.Record) (string, any, error) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		return "", nil, err
	}
	a := StateOf(msg)
	if a == nil {
		return "", nil, nil
	}
	return a.GetAgentId(), DocOf(a), nil
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

// Position is where a page ends: the sort value and the id.
type Position struct {
	Created int64  `json:"c,omitempty"`
	Name    string `json:"n,omitempty"`
	ID      string `json:"i"`
}

// PositionOf is the position of d in q's order.
func PositionOf(q Query, d AgentDoc) Position {
	if q.SortBy == "name" {
		return Position{Name: d.NameLower, ID: d.ID}
	}
	return Position{Created: d.CreatedAtUnix, ID: d.ID}
}

// List returns up to q.Limit agents after q.After.
func (rm *ReadModel) List(ctx context.Context, q Query) ([]AgentDoc, error) {
	filter := bson.D{{Key: "workspace_id", Value: q.WorkspaceID}, {Key: "deleted", Value: false}}
	if q.Search != "" {
		filter = append(filter, bson.E{Key: "name", Value: bson.D{{Key: "$regex", Value: regexp.QuoteMeta(q.Search)}, {Key: "$options", Value: "i"}}})
	}
	if len(q.Tags) > 0 {
		filter = append(filter, bson.E{Key: "tags", Value: bson.D{{Key: "$in", Value: q.Tags}}})
	}
	if q.Archived != nil {
		filter = append(filter, bson.E{Key: "archived", Value: *q.Archived})
	}
	if q.CreatedBy != "" {
		filter = append(filter, bson.E{Key: "created_by_user_id", Value: q.CreatedBy})
	}
	field, dir, cmp := "created_at_unix", 1, "$gt"
	if q.SortBy == "name" {
		field = "name_lower"
	}
	if q.Descending {
		dir, cmp = -1, "$lt"
	}
	if q.After != nil {
		var v any = q.After.Created
		if q.SortBy == "name" {
			v = q.After.Name
		}
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: field, Value: bson.D{{Key: cmp, Value: v}}}},
			bson.D{{Key: field, Value: v}, {Key: "_id", Value: bson.D{{Key: cmp, Value: q.After.ID}}}},
		}})
	}
	opts := options.Find().SetSort(bson.D{{Key: field, Value: dir}, {Key: "_id", Value: dir}}).SetLimit(int64(q.Limit))
	cur, err := rm.Agents.Find(ctx, filter, opts)
	if err != nil {
		return nil, err
	}
	var out []AgentDoc
	return out, cur.All(ctx, &out)
}
