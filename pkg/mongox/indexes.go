// Package mongox holds the Mongo conventions every read model shares.
package mongox

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// EnsureIndexes creates each index of a read model, idempotently, at
// start-up. One createIndexes command per index: FerretDB 1.24 drops the
// connection when a single command re-creates several existing indexes
// (which every restart does), while one at a time works everywhere.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, models ...mongo.IndexModel) error {
	for _, m := range models {
		if _, err := coll.Indexes().CreateOne(ctx, m); err != nil {
			return fmt.Errorf("index on %s: %w", coll.Name(), err)
		}
	}
	return nil
}
