package docstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Lookups by _id in the embedded store use an index instead of scanning
// the collection, and still find the documents.
func TestIDLookupsUseAnIndex(t *testing.T) {
	dir := t.TempDir()
	m, err := Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(m.URI))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("idx").Collection("docs")
	for i := range 50 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("doc_%d", i)}, {Key: "n", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := indexIDPaths(ctx, dir); err != nil {
		t.Fatal(err)
	}
	var got struct {
		N int `bson:"n"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "doc_42"}}).Decode(&got); err != nil || got.N != 42 {
		t.Fatalf("find by id after indexing: %+v %v", got, err)
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "idx.sqlite")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var table string
	if err := db.QueryRow(`SELECT table_name FROM _ferretdb_collections WHERE name = 'docs'`).Scan(&table); err != nil {
		t.Fatal(err)
	}
	// The statement FerretDB runs for a lookup by _id.
	rows, err := db.Query(fmt.Sprintf(`EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM %q WHERE _ferretdb_sjson->'$._id' = ?`, table), `"doc_42"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "USING INDEX") || strings.Contains(p, "SCAN") {
		t.Fatalf("a lookup by _id does not use an index: %s", p)
	}
	// Indexing again changes nothing.
	if err := indexIDPaths(ctx, dir); err != nil {
		t.Fatal(err)
	}
}

// The store starts again over files that carry the added index, and
// reads and writes as before.
func TestIDIndexSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for round := range 2 {
		m, err := Start(dir)
		if err != nil {
			t.Fatal(err)
		}
		client, err := mongo.Connect(options.Client().ApplyURI(m.URI))
		if err != nil {
			t.Fatal(err)
		}
		coll := client.Database("idx").Collection("docs")
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("doc_%d", round)}}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := indexIDPaths(ctx, dir); err != nil {
			t.Fatal(err)
		}
		if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != int64(round+1) {
			t.Fatalf("round %d: %d documents, %v", round, n, err)
		}
		if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: "nope"}}); err != nil {
			t.Fatalf("round %d: delete by id: %v", round, err)
		}
		// As every service does when it starts.
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
			t.Fatalf("round %d: create index: %v", round, err)
		}
		_ = client.Disconnect(ctx)
		m.Close()
	}
}
