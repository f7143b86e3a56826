// Package mongox holds the Mongo conventions every read model shares.
package mongox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// EnsureIndexes creates each index of a read model, idempotently, at
// start-up. One createIndexes command per index: FerretDB 1.24 drops the
// connection when a single command re-creates several existing indexes
// (which every restart does), while one at a time works everywhere.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, models ...mongo.IndexModel) error {
	for _, m := range models {
		if err := createIndex(ctx, coll, m); err != nil {
			return fmt.Errorf("index on %s: %w", coll.Name(), err)
		}
	}
	return nil
}

// createIndex makes one index, asking again a few times: the embedded
// store (FerretDB 1.24 on SQLite) now and then refuses an index of a
// collection made anew after a drop with "index … already exists" (seen
// in TestADroppedConversationStoreIsReplayed, about one start in three),
// and makes it when asked again.
func createIndex(ctx context.Context, coll *mongo.Collection, m mongo.IndexModel) error {
	const attempts = 4
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
		if _, err = coll.Indexes().CreateOne(ctx, m); err == nil {
			return nil
		}
	}
	return err
}
