package adapters

import (
	"context"
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// SecretsCollection is the workspace secrets' listing read model. It
// holds names, never values.
const SecretsCollection = "secrets"

// SecretsHandler is the projection handler of the secret subjects.
var SecretsHandler = projection.States(func(s *agentsv1.WorkspaceSecret) (string, any) { return s.GetSecretId(), app.SecretDocOf(s) })

// SecretReadModel serves the secret listing and the agents that use a
// secret.
type SecretReadModel struct {
	Secrets *mongo.Collection
	Agents  *mongo.Collection
}

// NewSecretReadModel opens the collection and its listing index, and the
// agents' index by the secrets they use.
func NewSecretReadModel(ctx context.Context, db *mongo.Database) (*SecretReadModel, error) {
	c := db.Collection(SecretsCollection)
	if err := mongox.EnsureIndexes(ctx, c,
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "name_lower", Value: 1}, {Key: "_id", Value: 1}}},
	); err != nil {
		return nil, err
	}
	agents := db.Collection(AgentsCollection)
	if err := mongox.EnsureIndexes(ctx, agents,
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "secret_ids", Value: 1}, {Key: "_id", Value: 1}}},
	); err != nil {
		return nil, err
	}
	return &SecretReadModel{Secrets: c, Agents: agents}, nil
}

// Apply writes secret state as of stream sequence seq.
func (rm *SecretReadModel) Apply(ctx context.Context, seq uint64, s *agentsv1.WorkspaceSecret) error {
	_, err := projection.Upsert(ctx, rm.Secrets, s.GetSecretId(), seq, app.SecretDocOf(s))
	return err
}

// ListSecrets returns up to limit live secrets of the workspace by name,
// after after, whose names start with prefix (case-insensitive).
func (rm *SecretReadModel) ListSecrets(ctx context.Context, workspaceID, prefix string, after *app.SecretPosition, limit int) ([]app.SecretDoc, error) {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "deleted", Value: false}}
	if prefix != "" {
		filter = append(filter, bson.E{Key: "name_lower", Value: bson.D{{Key: "$regex", Value: "^" + regexp.QuoteMeta(strings.ToLower(prefix))}}})
	}
	if after != nil {
		filter = append(filter, mongox.After(false, mongox.Key{Field: "name_lower", Value: after.Name}, mongox.Key{Field: "_id", Value: after.ID})...)
	}
	opts := options.Find().SetSort(mongox.Order(false, "name_lower", "_id")).SetLimit(int64(limit))
	cur, err := rm.Secrets.Find(ctx, filter, opts)
	if err != nil {
		return nil, err
	}
	var out []app.SecretDoc
	return out, cur.All(ctx, &out)
}

// AgentsUsing returns up to limit live agents of the workspace whose
// configuration uses the secret, by id.
func (rm *SecretReadModel) AgentsUsing(ctx context.Context, workspaceID, secretID string, limit int) ([]app.AgentDoc, error) {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "secret_ids", Value: secretID}, {Key: "deleted", Value: false}}
	cur, err := rm.Agents.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	var out []app.AgentDoc
	return out, cur.All(ctx, &out)
}
