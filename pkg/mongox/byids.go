package mongox

import (
	"context"
	"errors"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"golang.org/x/sync/errgroup"
)

// Lookup is how ByIDs asks for documents. The embedded store serves a
// lookup by _id from an index, but answers any other query, $in on _id
// included, by reading and matching every document of the collection:
// over a second at 10,000 documents, where the lookups take
// milliseconds. MongoDB answers $in from the index in one round trip.
type Lookup bool

const (
	// OneQuery asks for every id in one query ($in): for MongoDB.
	OneQuery Lookup = false
	// EachByID looks each id up by itself, ByIDLookups at once: for the
	// embedded store.
	EachByID Lookup = true
)

// ByIDLookups is how many lookups by id ByIDs runs at once.
const ByIDLookups = 8

// ByIDs returns the documents of coll whose _id is one of ids (those
// found, in no order), asked for as how says.
func ByIDs[D any](ctx context.Context, coll *mongo.Collection, ids []string, how Lookup) ([]D, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if how == OneQuery {
		cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		if err != nil {
			return nil, err
		}
		var out []D
		return out, cur.All(ctx, &out)
	}
	var mu sync.Mutex
	out := make([]D, 0, len(ids))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(ByIDLookups)
	for _, id := range ids {
		g.Go(func() error {
			var d D
			err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			if err != nil {
				return err
			}
			mu.Lock()
			out = append(out, d)
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}
