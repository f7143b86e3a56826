package projection

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A stored document starts with its _id and last_seq, then holds the
// handler's document in its own order, nested values untouched; an _id
// or last_seq of the handler's own is replaced, never doubled.
func TestWithSeq(t *testing.T) {
	doc := bson.D{
		{Key: "name", Value: "n"}, {Key: "_id", Value: "theirs"}, {Key: SeqField, Value: int64(1)},
		{Key: "nested", Value: bson.D{{Key: "a", Value: bson.A{int32(1), "two"}}}}, {Key: "count", Value: int32(3)},
	}
	raw, err := withSeq("mine", 42, doc)
	if err != nil {
		t.Fatal(err)
	}
	var got bson.D
	if err := bson.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := bson.D{
		{Key: "_id", Value: "mine"}, {Key: SeqField, Value: int64(42)}, {Key: "name", Value: "n"},
		{Key: "nested", Value: bson.D{{Key: "a", Value: bson.A{int32(1), "two"}}}}, {Key: "count", Value: int32(3)},
	}
	gotJSON, _ := bson.MarshalExtJSON(got, true, false)
	wantJSON, _ := bson.MarshalExtJSON(want, true, false)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("got  %s\nwant %s", gotJSON, wantJSON)
	}
	if _, err := withSeq("x", 1, make(chan int)); err == nil {
		t.Fatal("a value BSON cannot hold was accepted")
	}
}

// A document of a ticket's size, as projections write them.
func BenchmarkWithSeq(b *testing.B) {
	doc := struct {
		WorkspaceID string   `bson:"workspace_id"`
		AgentID     string   `bson:"agent_id"`
		Status      string   `bson:"status"`
		Deleted     bool     `bson:"deleted"`
		CreatedMS   int64    `bson:"created_at_unix_ms"`
		Labels      []string `bson:"labels"`
		State       []byte   `bson:"state"`
	}{"ws_bench", "agent_bench", "open", false, 1_800_000_000_000, []string{"billing", "refunds"}, make([]byte, 400)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := withSeq("tkt_0123456789", 7, doc); err != nil {
			b.Fatal(err)
		}
	}
}
