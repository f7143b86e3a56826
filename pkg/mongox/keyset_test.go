package mongox

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

type keyed struct {
	ID   string `bson:"_id"`
	Rank int    `bson:"rank"`
	At   int    `bson:"at"`
}

// Paging with After and Order, a page at a time in either direction,
// visits every document once, in the store's own order of the full
// query, ties on the leading fields included.
func TestKeysetPagesVisitEveryDocumentInOrder(t *testing.T) {
	ctx := context.Background()
	coll := collection(t, "keyset")
	var docs []any
	for i := range 23 {
		// Few ranks and times: most documents tie on the leading keys.
		docs = append(docs, keyed{ID: fmt.Sprintf("d%02d", (i*7)%23), Rank: i % 3, At: i % 4})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, descending := range []bool{false, true} {
		for _, fields := range [][]string{{"_id"}, {"at", "_id"}, {"rank", "at", "_id"}} {
			t.Run(fmt.Sprint(fields, descending), func(t *testing.T) {
				order := Order(descending, fields...)
				var whole []keyed
				cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(order))
				if err != nil || cur.All(ctx, &whole) != nil || len(whole) != 23 {
					t.Fatalf("whole listing: %d documents, %v", len(whole), err)
				}
				var paged []keyed
				filter := bson.D{}
				for range 30 {
					var page []keyed
					cur, err := coll.Find(ctx, filter, options.Find().SetSort(order).SetLimit(4))
					if err != nil || cur.All(ctx, &page) != nil {
						t.Fatal(err)
					}
					if len(page) == 0 {
						break
					}
					paged = append(paged, page...)
					last := page[len(page)-1]
					values := map[string]any{"_id": last.ID, "rank": last.Rank, "at": last.At}
					keys := make([]Key, len(fields))
					for i, f := range fields {
						keys[i] = Key{Field: f, Value: values[f]}
					}
					filter = After(descending, keys...)
				}
				if !slices.Equal(paged, whole) {
					t.Fatalf("pages visited\n%v\nthe whole listing is\n%v", paged, whole)
				}
			})
		}
	}
}
