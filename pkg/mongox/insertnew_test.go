package mongox

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A bulk insert over documents partly there already inserts the others
// and names those, by their place in the batch.
func TestInsertNewNamesWhatWasThere(t *testing.T) {
	coll := collection(t, "insert_new")
	ctx := context.Background()
	doc := func(id string) any { return bson.D{{Key: "_id", Value: id}} }
	if there, err := InsertNew(ctx, coll, []any{doc("a"), doc("c")}); err != nil || there != nil {
		t.Fatalf("into an empty collection: %v %v", there, err)
	}
	there, err := InsertNew(ctx, coll, []any{doc("a"), doc("b"), doc("c"), doc("d")})
	if err != nil || !slices.Equal(there, []int{0, 2}) {
		t.Fatalf("there already: %v, %v; want [0 2]", there, err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 4 {
		t.Fatalf("%d documents, %v; want 4", n, err)
	}
	if _, err := InsertNew(ctx, coll, []any{doc("e"), bson.D{{Key: "_id", Value: bson.D{{Key: "$bad", Value: 1}}}}}); err == nil {
		t.Error("a document the store refuses is no error")
	}
	if there, err := InsertNew(ctx, coll, nil); err != nil || there != nil {
		t.Errorf("nothing: %v %v", there, err)
	}
}
