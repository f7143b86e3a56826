package mongox

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Both ways find the same documents: those of the ids given that exist,
// each once.
func TestByIDsFindsTheSameEitherWay(t *testing.T) {
	coll := collection(t, "by_ids")
	ctx := context.Background()
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("id_%02d", i)}, {Key: "n", Value: i}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		ID string `bson:"_id"`
		N  int    `bson:"n"`
	}
	for _, ids := range [][]string{nil, {"id_03"}, {"id_19", "id_00", "missing", "id_07"}, {"missing"}} {
		want := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "missing" })
		slices.Sort(want)
		for _, how := range []Lookup{OneQuery, EachByID} {
			got, err := ByIDs[doc](ctx, coll, ids, how)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, d := range got {
				if fmt.Sprintf("id_%02d", d.N) != d.ID {
					t.Errorf("%s decoded as %+v", d.ID, d)
				}
				gotIDs = append(gotIDs, d.ID)
			}
			slices.Sort(gotIDs)
			if !slices.Equal(gotIDs, want) {
				t.Errorf("ids %v, each by id %v: %v; want %v", ids, how, gotIDs, want)
			}
		}
	}
}
