package mongox

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// A restart re-creates every index: that must succeed, repeatedly.
func TestEnsureIndexesIsIdempotent(t *testing.T) {
	coll := collection(t, "items")
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}},
		{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "name", Value: 1}}},
	}
	for i := range 3 {
		if err := EnsureIndexes(context.Background(), coll, models...); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	specs, err := coll.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 { // _id plus ours
		t.Fatalf("%d indexes, want 3", len(specs))
	}
}
