// Package adapters connects identity to its stores: the IDENTITY stream
// (event store) and its read models (MongoDB, or kept in memory).
package adapters

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// Collection names of the identity read model. Accounts are _v2 since
// their document id is the workspace and the account id (v1 used the
// account id alone, so every workspace's sa_admin overwrote the others');
// their projector is a new durable consumer that builds it from the
// stream.
const (
	AccountsCollection = "service_accounts_v2"
	UsersCollection    = "users"
	KeysCollection     = "api_keys"
)

// Durable consumers that write the collections.
const (
	AccountsDurable = "identity-accounts-v2"
	UsersDurable    = "identity-users"
	KeysDurable     = "identity-keys"
)

// ReadModel is the MongoDB read model: a listing is one query on
// workspace (and account), in creation order, each with its index.
type ReadModel struct {
	Accounts *mongo.Collection
	Users    *mongo.Collection
	Keys     *mongo.Collection
}

// OpenStore opens the collections as the durable copy only: no listing
// reads them, so they have no index to maintain beyond _id (on the
// embedded store each index costs every write and serves no query).
func OpenStore(db *mongo.Database) *ReadModel {
	return &ReadModel{Accounts: db.Collection(AccountsCollection), Users: db.Collection(UsersCollection), Keys: db.Collection(KeysCollection)}
}

// NewReadModel opens the collections and creates an index for each
// listing: equality on workspace (account, and for keys revoked), then
// the listing's order.
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	rm := OpenStore(db)
	// Each listing's index: its filters, then its order (byCreation).
	listings := map[*mongo.Collection][][]string{
		rm.Accounts: {{"workspace_id"}},
		rm.Users:    {{"workspace_id"}},
		rm.Keys:     {{"workspace_id", "revoked"}, {"workspace_id", "service_account_user_id", "revoked"}},
	}
	for c, filters := range listings {
		if err := mongox.EnsureListings(ctx, c, byCreation, "created_at_unix_nanos", int64(0), filters...); err != nil {
			return nil, err
		}
	}
	return rm, nil
}

// target is where doc is stored: its collection and document id.
func (rm *ReadModel) target(doc app.Doc) (*mongo.Collection, string) {
	switch d := doc.(type) {
	case app.AccountDoc:
		return rm.Accounts, accountDocID(d.WorkspaceID, d.ID)
	case app.UserDoc:
		return rm.Users, d.ID
	case app.KeyDoc:
		return rm.Keys, d.ID
	}
	return nil, ""
}

// accountDocID is unique across workspaces. Within one workspace it
// sorts as the account id does, so sorting on _id is the listing's order.
func accountDocID(workspaceID, userID string) string { return workspaceID + "/" + userID }

// Put writes doc as of stream sequence seq.
func (rm *ReadModel) Put(ctx context.Context, seq uint64, doc app.Doc) error {
	coll, id := rm.target(doc)
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
		doc := app.DocOf(msg)
		if doc == nil {
			return "", nil, nil
		}
		if c, id := rm.target(doc); c == coll {
			return id, doc, nil
		}
		return "", nil, nil
	}
}

// byCreation is every listing's order.
var byCreation = bson.D{{Key: "created_at_unix", Value: 1}, {Key: "created_at_unix_nanos", Value: 1}, {Key: "_id", Value: 1}}

// find runs one listing query.
func find[T any](ctx context.Context, coll *mongo.Collection, filter bson.D) ([]T, error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(byCreation))
	if err != nil {
		return nil, err
	}
	var out []T
	err = cur.All(ctx, &out)
	return out, err
}

// ListAccounts returns a workspace's service accounts, oldest first.
func (rm *ReadModel) ListAccounts(ctx context.Context, workspaceID string) ([]app.AccountDoc, error) {
	return find[app.AccountDoc](ctx, rm.Accounts, bson.D{{Key: "workspace_id", Value: workspaceID}})
}

// KeysFilter is the store query of a key listing.
func KeysFilter(workspaceID, accountID string) bson.D {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}}
	if accountID != "" {
		filter = append(filter, bson.E{Key: "service_account_user_id", Value: accountID})
	}
	return append(filter, bson.E{Key: "revoked", Value: false})
}

// ListKeys returns the live (not revoked) keys of a workspace, or of one
// account when accountID is set, oldest first.
func (rm *ReadModel) ListKeys(ctx context.Context, workspaceID, accountID string) ([]app.KeyDoc, error) {
	return find[app.KeyDoc](ctx, rm.Keys, KeysFilter(workspaceID, accountID))
}

// ListUsers returns a workspace's members (people), oldest first.
func (rm *ReadModel) ListUsers(ctx context.Context, workspaceID string) ([]app.UserDoc, error) {
	return find[app.UserDoc](ctx, rm.Users, bson.D{{Key: "workspace_id", Value: workspaceID}})
}

// Count counts one of a workspace's listings on its index, reading no
// document.
func (rm *ReadModel) Count(ctx context.Context, workspaceID string, l app.Listing) (int, error) {
	coll, filter := rm.Users, bson.D{{Key: "workspace_id", Value: workspaceID}}
	switch l {
	case app.Accounts:
		coll = rm.Accounts
	case app.LiveKeys:
		coll, filter = rm.Keys, KeysFilter(workspaceID, "")
	case app.Members:
	default:
		return 0, fmt.Errorf("identity read model: no listing %d", l)
	}
	n, err := coll.CountDocuments(ctx, filter)
	return int(n), err
}
