package mongox

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// A store nobody answers at is unavailable (a retry may succeed); what
// the store answered, or another failure, is not.
func TestIsUnavailable(t *testing.T) {
	// Nothing listens on port 1: server selection fails once its time is up.
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1/?connect=direct").
		SetServerSelectionTimeout(50 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	err = c.Database("d").Collection("c").FindOne(context.Background(), bson.D{}).Err()
	if !IsUnavailable(fmt.Errorf("read: %w", err)) {
		t.Fatalf("a store nobody answers at: %v (%T), not unavailable", err, err)
	}
	for _, other := range []error{nil, errors.New("boom"), mongo.ErrNoDocuments, context.Canceled} {
		if IsUnavailable(other) {
			t.Errorf("%v is unavailable", other)
		}
	}
}
