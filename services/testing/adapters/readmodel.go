// Package adapters connects the testing service to its stores: the
// TESTING stream (tests, folders, invocations) and the read models that
// serve listings, in MongoDB or in memory. Runs never touch Mongo: their
// results are read from stream TESTRUNS.
package adapters

import (
	"context"
	"regexp"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Collection names.
const (
	EntriesCollection     = "entries" // tests and folders, as listed together
	InvocationsCollection = "invocations"
)

// ReadModel is the read model in MongoDB: every listing is one query whose
// filter, sort and keyset an index serves, limited to a page and one more.
type ReadModel struct {
	EntryStore      *mongo.Collection
	InvocationStore *mongo.Collection
}

// OpenStore opens the collections without creating indexes: the durable
// copy behind the in-memory index, which no listing queries.
func OpenStore(db *mongo.Database) *ReadModel {
	return &ReadModel{EntryStore: db.Collection(EntriesCollection), InvocationStore: db.Collection(InvocationsCollection)}
}

// NewReadModel opens the collections and creates an index for every
// listing: entries by kind and by parent folder, invocations of the
// workspace, of an agent and of a test, newest first; running invocations,
// in every workspace (the completion sweeper) and in one (the quotas).
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	rm := OpenStore(db)
	// Each listing's index: its filters, then its order (newestFirst).
	listings := map[*mongo.Collection][][]string{
		rm.EntryStore:      {{"workspace_id", "deleted", "kind"}, {"workspace_id", "deleted", "parent_folder_id", "kind"}},
		rm.InvocationStore: {{"workspace_id"}, {"workspace_id", "agent_id"}, {"workspace_id", "test_ids"}},
	}
	for coll, filters := range listings {
		if err := mongox.EnsureListings(ctx, coll, newestFirst, "created_at_unix_nanos", int64(0), filters...); err != nil {
			return nil, err
		}
	}
	status := func(keys ...string) mongo.IndexModel {
		d := bson.D{}
		for _, k := range keys {
			d = append(d, bson.E{Key: k, Value: 1})
		}
		return mongo.IndexModel{Keys: d}
	}
	if err := mongox.EnsureIndexes(ctx, rm.InvocationStore, status("status"), status("workspace_id", "status")); err != nil {
		return nil, err
	}
	return rm, nil
}

// ApplyTest, ApplyFolder and ApplyInvocation write state as of seq.
func (rm *ReadModel) ApplyTest(ctx context.Context, seq uint64, t *testingv1.Test) error {
	_, err := projection.Upsert(ctx, rm.EntryStore, t.GetTestId(), seq, app.TestEntry(t))
	return err
}

func (rm *ReadModel) ApplyFolder(ctx context.Context, seq uint64, f *testingv1.Folder) error {
	_, err := projection.Upsert(ctx, rm.EntryStore, f.GetFolderId(), seq, app.FolderEntry(f))
	return err
}

func (rm *ReadModel) ApplyInvocation(ctx context.Context, seq uint64, inv *testingv1.Invocation) error {
	_, err := projection.Upsert(ctx, rm.InvocationStore, inv.GetInvocationId(), seq, app.SummaryOf(inv))
	return err
}

// EntriesHandler projects tests and folders.
func EntriesHandler(_ context.Context, rec eventstore.Record) (string, any, error) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		return "", nil, err
	}
	switch s := app.StateOf(msg).(type) {
	case *testingv1.Test:
		return s.GetTestId(), app.TestEntry(s), nil
	case *testingv1.Folder:
		return s.GetFolderId(), app.FolderEntry(s), nil
	}
	return "", nil, nil
}

// InvocationsHandler projects invocations.
var InvocationsHandler = projection.States(func(inv *testingv1.Invocation) (string, any) { return inv.GetInvocationId(), app.SummaryOf(inv) })

// Entries returns the live entries among ids.
func (rm *ReadModel) Entries(ctx context.Context, ws string, ids []string) (map[string]app.Entry, error) {
	out := make(map[string]app.Entry, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cur, err := rm.EntryStore.Find(ctx, bson.D{{Key: "workspace_id", Value: ws}, {Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}},
		{Key: "deleted", Value: false}})
	if err != nil {
		return nil, err
	}
	var docs []app.Entry
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	for _, d := range docs {
		out[d.ID] = d
	}
	return out, nil
}

// ChildCount counts the folder's live entries.
func (rm *ReadModel) ChildCount(ctx context.Context, ws, folderID string) (int, error) {
	n, err := rm.EntryStore.CountDocuments(ctx, bson.D{{Key: "workspace_id", Value: ws}, {Key: "deleted", Value: false},
		{Key: "parent_folder_id", Value: folderID}})
	return int(n), err
}

// newestFirst is every listing's sort: by second, nanosecond and id
// (app.EntryPosition, app.InvocationPosition).
var newestFirst = mongox.Order(true, "created_at_unix", "created_at_unix_nanos", "_id")

// after is the keyset condition: listed after (created, nanos, id).
func after(created, nanos int64, id string) bson.D {
	return mongox.After(true, mongox.Key{Field: "created_at_unix", Value: created},
		mongox.Key{Field: "created_at_unix_nanos", Value: nanos}, mongox.Key{Field: "_id", Value: id})
}

// containsAnyCase matches a substring in any (simple) case.
func containsAnyCase(s string) bson.D {
	return bson.D{{Key: "$regex", Value: regexp.QuoteMeta(s)}, {Key: "$options", Value: "i"}}
}

// PageEntries queries the kinds in turn when folders come first, else
// together; each query is served by an index in the listing's order.
func (rm *ReadModel) PageEntries(ctx context.Context, q app.EntryQuery) ([]app.Entry, bool, error) {
	if q.Limit <= 0 || (!q.Folders && !q.Tests) {
		return nil, false, nil
	}
	var passes [][]string
	switch {
	case q.Folders && q.Tests && !q.FoldersFirst:
		passes = [][]string{{app.KindFolder, app.KindTest}}
	case q.Folders && q.Tests:
		passes = [][]string{{app.KindFolder}, {app.KindTest}}
	case q.Folders:
		passes = [][]string{{app.KindFolder}}
	default:
		passes = [][]string{{app.KindTest}}
	}
	var out []app.Entry
	for _, kinds := range passes {
		folders := kinds[0] == app.KindFolder && len(kinds) == 1
		if q.FoldersFirst && q.After != nil && !q.After.Folder && folders {
			continue // the cursor is past every folder
		}
		and := bson.A{bson.D{{Key: "workspace_id", Value: q.WorkspaceID}, {Key: "deleted", Value: false},
			{Key: "kind", Value: bson.D{{Key: "$in", Value: kinds}}}}}
		if q.Parent != nil {
			and = append(and, bson.D{{Key: "parent_folder_id", Value: *q.Parent}})
		}
		if len(q.TestTypes) > 0 {
			and = append(and, bson.D{{Key: "$or", Value: bson.A{
				bson.D{{Key: "kind", Value: app.KindFolder}},
				bson.D{{Key: "type", Value: bson.D{{Key: "$in", Value: q.TestTypes}}}},
			}}})
		}
		if q.CreatedBy != "" {
			and = append(and, bson.D{{Key: "created_by_user_id", Value: q.CreatedBy}})
		}
		if q.NotCreatedBy != "" {
			and = append(and, bson.D{{Key: "created_by_user_id", Value: bson.D{{Key: "$ne", Value: q.NotCreatedBy}}}})
		}
		if q.Search != "" {
			and = append(and, bson.D{{Key: "name", Value: containsAnyCase(q.Search)}})
		}
		if q.After != nil && !(q.FoldersFirst && q.After.Folder && !folders) {
			and = append(and, after(q.After.Created, q.After.CreatedNanos, q.After.ID))
		}
		page, err := find[app.Entry](ctx, rm.EntryStore, bson.D{{Key: "$and", Value: and}}, q.Limit+1-len(out))
		if err != nil {
			return nil, false, err
		}
		if out = append(out, page...); len(out) > q.Limit {
			return out[:q.Limit], true, nil
		}
	}
	return out, false, nil
}

// PageInvocations is one query on the workspace's, agent's or test's
// index, newest first.
func (rm *ReadModel) PageInvocations(ctx context.Context, q app.InvocationFilter) ([]app.InvocationSummary, bool, error) {
	if q.Limit <= 0 {
		return nil, false, nil
	}
	and := bson.A{bson.D{{Key: "workspace_id", Value: q.WorkspaceID}}}
	for _, eq := range []bson.E{{Key: "agent_id", Value: q.AgentID}, {Key: "test_ids", Value: q.TestID}} {
		if eq.Value != "" {
			and = append(and, bson.D{eq})
		}
	}
	if branches := q.Branches(); len(branches) > 0 {
		and = append(and, bson.D{{Key: "branch_id", Value: bson.D{{Key: "$in", Value: branches}}}})
	}
	if q.Search != "" {
		and = append(and, bson.D{{Key: "title", Value: containsAnyCase(q.Search)}})
	}
	if q.StartTime != nil {
		and = append(and, bson.D{{Key: "created_at_unix", Value: bson.D{{Key: "$gte", Value: *q.StartTime}}}})
	}
	if q.EndTime != nil {
		and = append(and, bson.D{{Key: "created_at_unix", Value: bson.D{{Key: "$lte", Value: *q.EndTime}}}})
	}
	if q.After != nil {
		and = append(and, after(q.After.Created, q.After.CreatedNanos, q.After.ID))
	}
	page, err := find[app.InvocationSummary](ctx, rm.InvocationStore, bson.D{{Key: "$and", Value: and}}, q.Limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(page) > q.Limit {
		return page[:q.Limit], true, nil
	}
	return page, false, nil
}

// find returns up to limit documents of filter, newest first.
func find[D any](ctx context.Context, c *mongo.Collection, filter bson.D, limit int) ([]D, error) {
	cur, err := c.Find(ctx, filter, options.Find().SetSort(newestFirst).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	var out []D
	return out, cur.All(ctx, &out)
}

// Running returns the invocations still running, in every workspace.
func (rm *ReadModel) Running(ctx context.Context) ([]app.InvocationSummary, error) {
	cur, err := rm.InvocationStore.Find(ctx, bson.D{{Key: "status", Value: domain.InvocationRunning}})
	if err != nil {
		return nil, err
	}
	var out []app.InvocationSummary
	return out, cur.All(ctx, &out)
}

// Active returns up to limit of the workspace's running invocations, on
// the workspace and status index.
func (rm *ReadModel) Active(ctx context.Context, ws string, limit int) ([]app.InvocationSummary, error) {
	if limit <= 0 {
		return nil, nil
	}
	cur, err := rm.InvocationStore.Find(ctx, bson.D{{Key: "workspace_id", Value: ws}, {Key: "status", Value: domain.InvocationRunning}},
		options.Find().SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	var out []app.InvocationSummary
	return out, cur.All(ctx, &out)
}
