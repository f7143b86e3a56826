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
