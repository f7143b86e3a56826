// Package adapters connects identity to its stores: the IDENTITY stream
// (event store) and the Mongo read model its listings are served from.
package adapters

import (
	"context"
	"encoding/hex"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"google.golang.org/protobuf/proto"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
)

// Collection names of the identity read model.
const (
	AccountsCollection = "service_accounts"
	UsersCollection    = "users"
	KeysCollection     = "api_keys"
)

// AccountDoc is a service account as listed.
type AccountDoc struct {
	ID            string `bson:"_id"`
	WorkspaceID   string `bson:"workspace_id"`
	Name          string `bson:"name"`
	Email         string `bson:"email"`
	CreatedAtUnix int64  `bson:"created_at_unix"`
}

// UserDoc is a workspace member (a person) as listed.
type UserDoc struct {
	ID            string `bson:"_id"`
	WorkspaceID   string `bson:"workspace_id"`
	Email         string `bson:"email"`
	FirstName     string `bson:"first_name"`
	Role          string `bson:"role"`
	CreatedAtUnix int64  `bson:"created_at_unix"`
}

// KeyDoc is an API key as listed: never the secret, only its hash.
type KeyDoc struct {
	ID                   string   `bson:"_id"`
	WorkspaceID          string   `bson:"workspace_id"`
	ServiceAccountUserID string   `bson:"service_account_user_id"`
	Name                 string   `bson:"name"`
	Hint                 string   `bson:"hint"`
	HashedKey            string   `bson:"hashed_key"`
	Permissions          []string `bson:"permissions"`
	AllowedIPs           []string `bson:"allowed_ips"`
	ExpiresAtUnix        *int64   `bson:"expires_at_unix"`
	IsDisabled           bool     `bson:"is_disabled"`
	Revoked              bool     `bson:"revoked"`
	CreatedAtUnix        int64    `bson:"created_at_unix"`
	RateLimitPerMinute   *int64   `bson:"rate_limit_per_minute"`
	RateLimitPerHour     *int64   `bson:"rate_limit_per_hour"`
}

// KeyDocOf maps key state to its listed form.
func KeyDocOf(k *identityv1.ApiKey) KeyDoc {
	return KeyDoc{
		ID: k.GetKeyId(), WorkspaceID: k.GetWorkspaceId(), ServiceAccountUserID: k.GetServiceAccountUserId(),
		Name: k.GetName(), Hint: k.GetHint(), HashedKey: hex.EncodeToString(k.GetSecretSha256()),
		Permissions: k.GetPermissions(), AllowedIPs: k.GetAllowedIps(), ExpiresAtUnix: k.ExpiresAtUnix,
		IsDisabled: k.GetIsDisabled(), Revoked: k.RevokedAtUnix != nil, CreatedAtUnix: k.GetCreatedAtUnix(),
		RateLimitPerMinute: k.RateLimitPerMinute, RateLimitPerHour: k.RateLimitPerHour,
	}
}

// AccountDocOf maps account state to its listed form.
func AccountDocOf(a *identityv1.ServiceAccount) AccountDoc {
	return AccountDoc{ID: a.GetUserId(), WorkspaceID: a.GetWorkspaceId(), Name: a.GetName(), Email: a.GetEmail(), CreatedAtUnix: a.GetCreatedAtUnix()}
}

// ReadModel serves identity listings.
type ReadModel struct {
	Accounts *mongo.Collection
	Users    *mongo.Collection
	Keys     *mongo.Collection
}

// NewReadModel opens the collections in db and creates their indexes.
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	rm := &ReadModel{Accounts: db.Collection(AccountsCollection), Users: db.Collection(UsersCollection), Keys: db.Collection(KeysCollection)}
	if err := mongox.EnsureIndexes(ctx, rm.Users, mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "created_at_unix", Value: 1}}}); err != nil {
		return nil, err
	}
	if err := mongox.EnsureIndexes(ctx, rm.Accounts, mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "created_at_unix", Value: 1}}}); err != nil {
		return nil, err
	}
	if err := mongox.EnsureIndexes(ctx, rm.Keys, mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "service_account_user_id", Value: 1}}}); err != nil {
		return nil, err
	}
	return rm, nil
}

// target maps an identity event to the read-model document its state
// becomes; coll is nil for events that are not listed.
func (rm *ReadModel) target(msg proto.Message) (coll *mongo.Collection, id string, doc any) {
	switch ev := msg.(type) {
	case *identityv1.ServiceAccountCreated:
		return rm.Accounts, ev.GetAccount().GetUserId(), AccountDocOf(ev.GetAccount())
	case *identityv1.UserAdded:
		u := ev.GetUser()
		return rm.Users, u.GetUserId(), UserDoc{ID: u.GetUserId(), WorkspaceID: u.GetWorkspaceId(), Email: u.GetEmail(), FirstName: u.GetFirstName(), Role: u.GetRole(), CreatedAtUnix: u.GetCreatedAtUnix()}
	case *identityv1.ApiKeyCreated:
		return rm.Keys, ev.GetKey().GetKeyId(), KeyDocOf(ev.GetKey())
	case *identityv1.ApiKeyUpdated:
		return rm.Keys, ev.GetKey().GetKeyId(), KeyDocOf(ev.GetKey())
	case *identityv1.ApiKeyRevoked:
		return rm.Keys, ev.GetKey().GetKeyId(), KeyDocOf(ev.GetKey())
	}
	return nil, "", nil
}

// ApplyMessage writes the state carried by msg, appended at seq.
func (rm *ReadModel) ApplyMessage(ctx context.Context, seq uint64, msg proto.Message) error {
	coll, id, doc := rm.target(msg)
	if coll == nil {
		return nil
	}
	_, err := projection.Upsert(ctx, coll, id, seq, doc)
	return err
}

// Handler returns the projection handler for one of the collections.
func (rm *ReadModel) Handler(coll *mongo.Collection) projection.Handler {
	return func(_ context.Context, rec eventstore.Record) (string, any, error) {
		msg, err := esproto.Decode(rec)
		if err != nil {
			return "", nil, err
		}
		c, id, doc := rm.target(msg)
		if c != coll {
			return "", nil, nil
		}
		return id, doc, nil
	}
}

// ListAccounts returns a workspace's service accounts, oldest first.
func (rm *ReadModel) ListAccounts(ctx context.Context, workspaceID string) ([]AccountDoc, error) {
	var out []AccountDoc
	cur, err := rm.Accounts.Find(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}},
		options.Find().SetSort(bson.D{{Key: "created_at_unix", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	return out, cur.All(ctx, &out)
}

// ListKeys returns the live (not revoked) keys of a workspace, or of one
// account when accountID is set.
func (rm *ReadModel) ListKeys(ctx context.Context, workspaceID, accountID string) ([]KeyDoc, error) {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "revoked", Value: false}}
	if accountID != "" {
		filter = append(filter, bson.E{Key: "service_account_user_id", Value: accountID})
	}
	var out []KeyDoc
	cur, err := rm.Keys.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "created_at_unix", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	return out, cur.All(ctx, &out)
}

// ListUsers returns a workspace's members (people), oldest first.
func (rm *ReadModel) ListUsers(ctx context.Context, workspaceID string) ([]UserDoc, error) {
	var out []UserDoc
	cur, err := rm.Users.Find(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}},
		options.Find().SetSort(bson.D{{Key: "created_at_unix", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	return out, cur.All(ctx, &out)
}
