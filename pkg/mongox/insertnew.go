package mongox

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// InsertNew inserts docs in one unordered bulk write and returns the
// positions in docs of those a document with the same key was there
// already for (a batch written again, or a slot another writer took):
// those are not an error; anything else is.
func InsertNew(ctx context.Context, coll *mongo.Collection, docs []any) (there []int, err error) {
	if len(docs) == 0 {
		return nil, nil
	}
	_, err = coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	var bulk mongo.BulkWriteException
	if err == nil || !errors.As(err, &bulk) || bulk.WriteConcernError != nil {
		return nil, err
	}
	for _, we := range bulk.WriteErrors {
		if !mongo.IsDuplicateKeyError(we) {
			return nil, we
		}
		there = append(there, we.Index)
	}
	return there, nil
}
