package mongox

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// A collection from before a field: its documents get the field, its
// retired index goes, and one brought over is left as it is.
func TestAddFieldBringsACollectionOverOnce(t *testing.T) {
	ctx := context.Background()
	coll := collection(t, "add_field")
	retired := bson.D{{Key: "workspace_id", Value: 1}, {Key: "created", Value: -1}, {Key: "_id", Value: -1}}
	kept := bson.D{{Key: "workspace_id", Value: 1}, {Key: "created", Value: -1}, {Key: "nanos", Value: -1}, {Key: "_id", Value: -1}}
	if err := EnsureIndexes(ctx, coll, mongo.IndexModel{Keys: retired}, mongo.IndexModel{Keys: kept}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "old"}, {Key: "workspace_id", Value: "ws"}, {Key: "created", Value: int64(1)}},
		bson.D{{Key: "_id", Value: "new"}, {Key: "workspace_id", Value: "ws"}, {Key: "created", Value: int64(1)}, {Key: "nanos", Value: int64(7)}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := AddField(ctx, coll, "nanos", int64(0), retired); err != nil {
		t.Fatal(err)
	}
	nanos := func(id string) int64 {
		var doc struct {
			Nanos *int64 `bson:"nanos"`
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil || doc.Nanos == nil {
			t.Fatalf("%s: %+v, %v", id, doc, err)
		}
		return *doc.Nanos
	}
	if nanos("old") != 0 || nanos("new") != 7 {
		t.Fatalf("nanos: old %d, new %d; want 0 and 7", nanos("old"), nanos("new"))
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range specs {
		names[s.Name] = true
	}
	if names[IndexName(retired)] || !names[IndexName(kept)] {
		t.Fatalf("indexes %v: want %s gone and %s kept", names, IndexName(retired), IndexName(kept))
	}
	// Brought over: a document written without the field since (by a
	// replica of the binary before) is left as it is.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "later"}, {Key: "workspace_id", Value: "ws"}}); err != nil {
		t.Fatal(err)
	}
	if err := AddField(ctx, coll, "nanos", int64(0), retired); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "nanos", Value: bson.D{{Key: "$exists", Value: false}}}}); err != nil || n != 1 {
		t.Fatalf("documents without the field after a second start: %d, %v; want the later one alone", n, err)
	}
	// A replica starting at the same moment finds the index it listed
	// dropped by the other: that is not a failure to start.
	err = coll.Indexes().DropOne(ctx, IndexName(retired))
	if !isIndexNotFound(err) {
		t.Fatalf("dropping an index no longer there: %v; want IndexNotFound", err)
	}
}
