package mongox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// AddField brings a collection from before its documents kept field up to
// date: every document without it gets value (a keyset condition on the
// field passes over a document that lacks it), then the indexes of the
// order before the field, retired (by their keys), are dropped. Those
// indexes mark a collection not yet brought over, so one that was costs a
// listing of its indexes, and one stopped half-way is taken up again at
// the next start. The indexes of the new order are made first
// (EnsureListings does both).
func AddField(ctx context.Context, coll *mongo.Collection, field string, value any, retired ...bson.D) error {
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		return fmt.Errorf("indexes of %s: %w", coll.Name(), err)
	}
	var drop []string
	for _, keys := range retired {
		name := IndexName(keys)
		for _, s := range specs {
			if s.Name == name {
				drop = append(drop, name)
			}
		}
	}
	if len(drop) == 0 {
		return nil
	}
	if _, err := coll.UpdateMany(ctx, bson.D{{Key: field, Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: field, Value: value}}}}); err != nil {
		return fmt.Errorf("%s of %s: %w", field, coll.Name(), err)
	}
	for _, name := range drop {
		// Replicas starting at once each bring the collection over: the
		// index one of them dropped is gone for the other.
		if err := coll.Indexes().DropOne(ctx, name); err != nil && !isIndexNotFound(err) {
			return fmt.Errorf("retire index %s of %s: %w", name, coll.Name(), err)
		}
	}
	return nil
}

// EnsureListings makes the index of each listing of coll, its filter
// fields (ascending) then order, and brings over a collection from before
// field joined the order (AddField with value): its indexes are those
// same ones with the order less field.
func EnsureListings(ctx context.Context, coll *mongo.Collection, order bson.D, field string, value any, filters ...[]string) error {
	before := slices.DeleteFunc(slices.Clone(order), func(e bson.E) bool { return e.Key == field })
	indexes := make([]mongo.IndexModel, 0, len(filters))
	retired := make([]bson.D, 0, len(filters))
	for _, f := range filters {
		keys := make(bson.D, len(f))
		for i, name := range f {
			keys[i] = bson.E{Key: name, Value: 1}
		}
		indexes = append(indexes, mongo.IndexModel{Keys: slices.Concat(keys, order)})
		retired = append(retired, slices.Concat(keys, before))
	}
	if err := EnsureIndexes(ctx, coll, indexes...); err != nil {
		return err
	}
	return AddField(ctx, coll, field, value, retired...)
}

// isIndexNotFound reports MongoDB's IndexNotFound (code 27).
func isIndexNotFound(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == 27 || ce.Name == "IndexNotFound")
}

// IndexName is the name MongoDB gives an index of keys by default.
func IndexName(keys bson.D) string {
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, k.Key, fmt.Sprint(k.Value))
	}
	return strings.Join(parts, "_")
}
