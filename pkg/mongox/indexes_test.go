package mongox

import (
	"context"
	"fmt"
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

// Replicas starting at once each make a fresh collection's indexes: every
// one of them succeeds.
func TestEnsureIndexesAtOnce(t *testing.T) {
	for round := range 5 {
		coll := collection(t, fmt.Sprintf("at_once_%d", round))
		models := []mongo.IndexModel{
			{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "seen", Value: 1}, {Key: "_id", Value: -1}}},
			{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "terms", Value: 1}, {Key: "_id", Value: -1}}},
		}
		errs := make(chan error, 4)
		for range cap(errs) {
			go func() { errs <- EnsureIndexes(context.Background(), coll, models...) }()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
