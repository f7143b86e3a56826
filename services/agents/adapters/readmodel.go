// Package adapters connects agents to its stores: the AGENTS stream and
// the Mongo read model that serves listings.
package adapters

import (
	"context"
	"regexp"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// AgentsCollection is the listing read model.
const AgentsCollection = "agents"

// ReadModel serves agent listings.
type ReadModel struct{ Agents *mongo.Collection }

// NewReadModel opens the collection and creates the indexes of every
// listing shape.
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	c := db.Collection(AgentsCollection)
	err := mongox.EnsureIndexes(ctx, c,
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "name_lower", Value: 1}, {Key: "_id", Value: 1}}},
	)
	if err != nil {
		return nil, err
	}
	if err := mongox.EnsureListings(ctx, c, mongox.Order(true, "created_at_unix", "created_at_unix_nanos", "_id"), "created_at_unix_nanos", int64(0),
		[]string{"workspace_id"}); err != nil {
		return nil, err
	}
	return &ReadModel{Agents: c}, nil
}

// Apply writes agent state as of stream sequence seq.
func (rm *ReadModel) Apply(ctx context.Context, seq uint64, a *agentsv1.Agent) error {
	_, err := projection.Upsert(ctx, rm.Agents, a.GetAgentId(), seq, app.DocOf(a))
	return err
}

// Handler is the projection handler for the AGENTS stream.
var Handler = projection.States(func(a *agentsv1.Agent) (string, any) { return a.GetAgentId(), app.DocOf(a) })

// List returns up to q.Limit agents after q.After.
func (rm *ReadModel) List(ctx context.Context, q app.Query) ([]app.AgentDoc, error) {
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
	fields := []string{"created_at_unix", "created_at_unix_nanos", "_id"}
	if q.SortBy == "name" {
		fields = []string{"name_lower", "_id"}
	}
	if p := q.After; p != nil {
		// The cursor's value of each field of the order.
		values := []any{p.Created, p.CreatedNanos, p.ID}
		if q.SortBy == "name" {
			values = []any{p.Name, p.ID}
		}
		keys := make([]mongox.Key, len(fields))
		for i, f := range fields {
			keys[i] = mongox.Key{Field: f, Value: values[i]}
		}
		filter = append(filter, mongox.After(q.Descending, keys...)...)
	}
	opts := options.Find().SetSort(mongox.Order(q.Descending, fields...)).SetLimit(int64(q.Limit))
	cur, err := rm.Agents.Find(ctx, filter, opts)
	if err != nil {
		return nil, err
	}
	var out []app.AgentDoc
	return out, cur.All(ctx, &out)
}
