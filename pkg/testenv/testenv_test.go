package testenv

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestEnvServesNATSAndMongo(t *testing.T) {
	env := New(t)
	nc := env.Conn(t)
	if !nc.IsConnected() {
		t.Fatal("nats not connected")
	}
	storesAndReadsBack(t, env)
}

// storesAndReadsBack writes a document to env's store and reads it back.
func storesAndReadsBack(t *testing.T, env *Env) {
	t.Helper()
	coll := env.Mongo(t).Database("testenv").Collection("probe")
	ctx := context.Background()
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "a", "v": 1}); err != nil {
		t.Fatal(err)
	}
	var got struct{ V int }
	if err := coll.FindOne(ctx, bson.M{"_id": "a"}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.V != 1 {
		t.Fatalf("read back %d, want 1", got.V)
	}
}
