package testenv

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// FindPlan is the query planner's plan for find (a find command's body:
// the collection, its filter, sort and limit) on db, as text to search
// for stages: COLLSCAN, IXSCAN, SORT.
func FindPlan(t testing.TB, db *mongo.Database, find bson.D) string {
	t.Helper()
	var plan bson.M
	err := db.RunCommand(context.Background(), bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "queryPlanner"}}).Decode(&plan)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(plan["queryPlanner"])
}

// PlanDatabase is a fresh database named name on a real MongoDB, for
// checking query plans; elsewhere the test is skipped, saying how to run
// it (the embedded store has no query planner).
func PlanDatabase(t *testing.T, name string) *mongo.Database {
	t.Helper()
	if !RealMongo() {
		t.Skip("query plans are checked on a real MongoDB: run with VOICEAI_TEST_DOCKER=1 (make test-docker)")
	}
	return New(t).Mongo(t).Database(name)
}
