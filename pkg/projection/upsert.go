// Package projection keeps Mongo read models current from JetStream.
// Events are state-carrying, so each event maps to a whole document; a
// document records the stream sequence it reflects (last_seq) and is only
// ever replaced by a newer one. Redelivery and reordering therefore
// converge to the newest state, and a read model can be rebuilt from the
// stream alone. Deleted aggregates stay as tombstone documents (the
// handler decides their content), so a late older event cannot revive them.
package projection

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/voiceai-platform/voiceai/pkg/mongox"
)

// SeqField holds the stream sequence a document reflects.
const SeqField = "last_seq"

// singleWriter is set when this process is the only writer of its store
// (the embedded FerretDB of the all-in-one stack).
var singleWriter atomic.Bool

// AssumeSingleWriter switches guarded writes to an _id-only read and
// replace under the per-document lock. FerretDB pushes down only a bare
// _id filter, so the store-side guard (a filter on _id and last_seq)
// scans the whole collection on every write; with one writer process,
// the lock gives the same guarantee at the cost of a point read. Only the
// embedded stack may call it: it is wrong when other processes write the
// same collections.
func AssumeSingleWriter() { singleWriter.Store(true) }

// Upsert stores doc as the document id at stream sequence seq, unless the
// stored document already reflects seq or later. applied reports whether
// it was written. doc is any BSON-marshalable value; its _id and last_seq
// are set here.
//
// Writes of one document are serialised within the process: FerretDB
// evaluates the guarded replace as a read then a write with no isolation,
// so two concurrent writers could otherwise both pass the guard and the
// older could land last. Across processes that takes a real MongoDB,
// where the guarded replace is atomic per document.
func Upsert(ctx context.Context, coll *mongo.Collection, id string, seq uint64, doc any) (applied bool, err error) {
	replacement, err := withSeq(id, seq, doc)
	if err != nil {
		return false, err
	}
	unlock := lockDoc(coll, id)
	defer unlock()
	if singleWriter.Load() {
		applied, err = replaceIfNewerLocked(ctx, coll, id, seq, replacement)
	} else {
		applied, err = replaceIfNewer(ctx, coll, id, seq, replacement)
	}
	if err != nil {
		return false, fmt.Errorf("upsert %s/%s@%d: %w", coll.Name(), id, seq, err)
	}
	return applied, nil
}

// replaceIfNewer lets the store judge: the filter matches only an older
// version; when a newer one exists the upsert tries to insert a second
// document with the same _id, and the unique _id index refuses it.
func replaceIfNewer(ctx context.Context, coll *mongo.Collection, id string, seq uint64, replacement bson.Raw) (bool, error) {
	filter := bson.D{{Key: "_id", Value: id}, {Key: SeqField, Value: bson.D{{Key: "$lt", Value: int64(seq)}}}}
	for attempt := 1; ; attempt++ {
		_, err := coll.ReplaceOne(ctx, filter, replacement, options.Replace().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) {
			return err == nil, err
		}
		// The first refusal may be a concurrent writer's insert of an older
		// version that landed after our filter missed. The document exists
		// now and is never deleted, so a second attempt decides: it either
		// replaces the document or proves it newer.
		if attempt == 2 {
			return false, nil
		}
	}
}

// replaceIfNewerLocked compares sequences in the process; the caller
// holds the document's lock and is the store's only writer process. The
// batch insert (UpsertBatch) takes no lock, so a document read as absent
// may be inserted before our upsert inserts it: the duplicate key says so,
// and the comparison is made again against what the other writer stored.
// Documents are never deleted, so the second attempt finds it.
func replaceIfNewerLocked(ctx context.Context, coll *mongo.Collection, id string, seq uint64, replacement bson.Raw) (bool, error) {
	for attempt := 1; ; attempt++ {
		stored, found, err := storedSeq(ctx, coll, id)
		if err != nil {
			return false, err
		}
		if found && stored >= int64(seq) {
			return false, nil
		}
		_, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, replacement, options.Replace().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) || attempt == 2 {
			return err == nil, err
		}
	}
}

// storedSeq reads the sequence the stored document reflects, if any.
func storedSeq(ctx context.Context, coll *mongo.Collection, id string) (seq int64, found bool, err error) {
	var stored struct {
		LastSeq int64 `bson:"last_seq"`
	}
	err = coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(bson.D{{Key: SeqField, Value: 1}})).Decode(&stored)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, false, nil
	}
	return stored.LastSeq, err == nil, err
}

// withSeq is doc as stored: its _id and last_seq first, then doc's own
// fields (any _id or last_seq of its own left out). doc is marshalled
// once and its fields copied as they are: decoding them into values to
// encode them again cost more than the store's write of a small
// document.
func withSeq(id string, seq uint64, doc any) (bson.Raw, error) {
	fields, err := bson.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", doc, err)
	}
	elems, err := bsoncore.Document(fields).Elements()
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", doc, err)
	}
	i, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(fields)+len(id)+32))
	out = bsoncore.AppendStringElement(out, "_id", id)
	out = bsoncore.AppendInt64Element(out, SeqField, int64(seq))
	for _, e := range elems {
		if k := e.Key(); k != "_id" && k != SeqField {
			out = append(out, e...)
		}
	}
	out, err = bsoncore.AppendDocumentEnd(out, i)
	return bson.Raw(out), err
}

// docLocks serialise writes of one document within the process; a fixed
// set of stripes keeps memory bounded whatever the number of documents.
var docLocks [256]sync.Mutex

func lockDoc(coll *mongo.Collection, id string) (unlock func()) {
	h := fnv.New32a()
	h.Write([]byte(coll.Database().Name() + "/" + coll.Name() + "/" + id))
	mu := &docLocks[h.Sum32()%uint32(len(docLocks))]
	mu.Lock()
	return mu.Unlock
}

// Write is one document write of a batch: doc as document id at stream
// sequence seq.
type Write struct {
	ID  string
	Seq uint64
	Doc any
}

// UpsertBatch applies writes as Upsert does, in far fewer store
// operations: of several writes of one document only the newest counts,
// documents not stored yet are inserted by one unordered InsertMany (the
// unique _id index refuses those that exist, concurrent writers
// included), and only those go through Upsert's guarded replace. A stream
// of creates costs one insert per batch instead of two operations per
// event.
func UpsertBatch(ctx context.Context, coll *mongo.Collection, writes []Write) error {
	newest := make(map[string]Write, len(writes))
	var order []string
	for _, w := range writes {
		prev, seen := newest[w.ID]
		if !seen {
			order = append(order, w.ID)
		}
		if !seen || w.Seq > prev.Seq {
			newest[w.ID] = w
		}
	}
	docs := make([]any, 0, len(order))
	for _, id := range order {
		w := newest[id]
		d, err := withSeq(w.ID, w.Seq, w.Doc)
		if err != nil {
			return err
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil
	}
	there, err := mongox.InsertNew(ctx, coll, docs)
	if err != nil {
		return fmt.Errorf("insert batch into %s: %w", coll.Name(), err)
	}
	for _, i := range there {
		w := newest[order[i]]
		if _, err := Upsert(ctx, coll, w.ID, w.Seq, w.Doc); err != nil {
			return err
		}
	}
	return nil
}
