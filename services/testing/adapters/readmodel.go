// Package adapters connects the testing service to its stores: the
// TESTING stream (tests, folders, invocations) and the Mongo read model
// serving listings. Runs never touch Mongo: their results are read from
// stream TESTRUNS.
package adapters

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Collection names.
const (
	EntriesCollection     = "entries" // tests and folders, as listed together
	InvocationsCollection = "invocations"
	// InvocationTestsCollection holds each invocation's test ids, apart
	// from the listed document: the embedded store parses a whole document
	// to filter on any of its fields, and 5,000 ids made every listing of
	// the workspace parse them all.
	InvocationTestsCollection = "invocation_tests"
)

// EntryDoc is a test or a folder as listed.
type EntryDoc struct {
	ID             string `bson:"_id"`
	WorkspaceID    string `bson:"workspace_id"`
	Kind           string `bson:"kind"` // "test" or "folder"
	Name           string `bson:"name"`
	Type           string `bson:"type"` // llm|tool|simulation, or folder
	ParentFolderID string `bson:"parent_folder_id"`
	CreatedBy      string `bson:"created_by_user_id"`
	CreatedAtUnix  int64  `bson:"created_at_unix"`
	UpdatedAtUnix  int64  `bson:"updated_at_unix"`
	InitSource     string `bson:"conversation_initiation_source"`
	Deleted        bool   `bson:"deleted"`
	Seq            int64  `bson:"last_seq"`
}

// InvocationDoc is an invocation as listed.
type InvocationDoc struct {
	ID            string `bson:"_id"`
	WorkspaceID   string `bson:"workspace_id"`
	AgentID       string `bson:"agent_id"`
	BranchID      string `bson:"branch_id"`
	Title         string `bson:"title"`
	CreatedAtUnix int64  `bson:"created_at_unix"`
	RepeatCount   int32  `bson:"repeat_count"`
	JobsTotal     int64  `bson:"jobs_total"`
	Runs          int64  `bson:"runs"`
	Status        string `bson:"status"`
	FolderID      string `bson:"folder_id"`
	PassedCount   int64  `bson:"passed_count"`
	FailedCount   int64  `bson:"failed_count"`
	// The newest attempt (1, then one per resubmission) and its runs.
	Attempt     int32 `bson:"attempt"`
	AttemptRuns int64 `bson:"attempt_runs"`
}

// InvocationTestsDoc is the distinct test ids an invocation ran.
type InvocationTestsDoc struct {
	ID          string   `bson:"_id"`
	WorkspaceID string   `bson:"workspace_id"`
	TestIDs     []string `bson:"test_ids"`
}

// TestDoc maps test state to its entry.
func TestDoc(t *testingv1.Test) EntryDoc {
	def, _ := domain.ParseDefinition(t.GetDefinitionJson())
	src := ""
	if def.ConversationInitiationSource != nil {
		src = *def.ConversationInitiationSource
	}
	return EntryDoc{ID: t.GetTestId(), WorkspaceID: t.GetWorkspaceId(), Kind: "test", Name: t.GetName(), Type: t.GetType(),
		ParentFolderID: t.GetParentFolderId(), CreatedBy: t.GetCreatedByUserId(), CreatedAtUnix: t.GetCreatedAtUnix(),
		UpdatedAtUnix: t.GetUpdatedAtUnix(), InitSource: src, Deleted: t.DeletedAtUnix != nil}
}

// FolderDoc maps folder state to its entry.
func FolderDoc(f *testingv1.Folder) EntryDoc {
	return EntryDoc{ID: f.GetFolderId(), WorkspaceID: f.GetWorkspaceId(), Kind: "folder", Name: f.GetName(), Type: domain.TypeFolder,
		ParentFolderID: f.GetParentFolderId(), CreatedBy: f.GetCreatedByUserId(), CreatedAtUnix: f.GetCreatedAtUnix(),
		UpdatedAtUnix: f.GetUpdatedAtUnix(), Deleted: f.DeletedAtUnix != nil}
}

// InvDoc maps invocation state to its listed form.
func InvDoc(inv *testingv1.Invocation) InvocationDoc {
	runs := int64(len(inv.GetTests())) * int64(max(inv.GetRepeatCount(), 1))
	attempt, attemptRuns := int32(1), runs
	if rs := inv.GetResubmissions(); len(rs) > 0 {
		attempt, attemptRuns = rs[len(rs)-1].GetAttempt(), int64(len(rs[len(rs)-1].GetRunIds()))
	}
	return InvocationDoc{Attempt: attempt, AttemptRuns: attemptRuns, ID: inv.GetInvocationId(), WorkspaceID: inv.GetWorkspaceId(),
		AgentID: inv.GetAgentId(), BranchID: inv.GetBranchId(), Title: inv.GetTitle(), CreatedAtUnix: inv.GetCreatedAtUnix(),
		RepeatCount: inv.GetRepeatCount(), JobsTotal: inv.GetJobsTotal(),
		Runs: runs, Status: inv.GetStatus(), FolderID: inv.GetFolderId(),
		PassedCount: inv.GetPassedCount(), FailedCount: inv.GetFailedCount()}
}

// InvTestsDoc maps invocation state to its test ids.
func InvTestsDoc(inv *testingv1.Invocation) InvocationTestsDoc {
	ids := make([]string, 0, len(inv.GetTests()))
	seen := map[string]bool{}
	for _, t := range inv.GetTests() {
		if !seen[t.GetTestId()] {
			seen[t.GetTestId()] = true
			ids = append(ids, t.GetTestId())
		}
	}
	return InvocationTestsDoc{ID: inv.GetInvocationId(), WorkspaceID: inv.GetWorkspaceId(), TestIDs: ids}
}

// StateOf extracts the aggregate state carried by a TESTING event.
func StateOf(msg proto.Message) proto.Message {
	type test interface{ GetTest() *testingv1.Test }
	type folder interface{ GetFolder() *testingv1.Folder }
	type invocation interface{ GetInvocation() *testingv1.Invocation }
	switch ev := msg.(type) {
	case test:
		return ev.GetTest()
	case folder:
		return ev.GetFolder()
	case invocation:
		return ev.GetInvocation()
	}
	return nil
}

// ReadModel serves listings.
type ReadModel struct {
	Entries         *mongo.Collection
	Invocations     *mongo.Collection
	InvocationTests *mongo.Collection
}

// NewReadModel opens the collections and creates their indexes.
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	rm := &ReadModel{Entries: db.Collection(EntriesCollection), Invocations: db.Collection(InvocationsCollection),
		InvocationTests: db.Collection(InvocationTestsCollection)}
	if err := mongox.EnsureIndexes(ctx, rm.Entries,
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "created_at_unix", Value: -1}}}); err != nil {
		return nil, err
	}
	if err := mongox.EnsureIndexes(ctx, rm.Invocations,
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "created_at_unix", Value: -1}}}); err != nil {
		return nil, err
	}
	return rm, nil
}

// ApplyTest, ApplyFolder and ApplyInvocation write state as of seq.
func (rm *ReadModel) ApplyTest(ctx context.Context, seq uint64, t *testingv1.Test) error {
	_, err := projection.Upsert(ctx, rm.Entries, t.GetTestId(), seq, TestDoc(t))
	return err
}

func (rm *ReadModel) ApplyFolder(ctx context.Context, seq uint64, f *testingv1.Folder) error {
	_, err := projection.Upsert(ctx, rm.Entries, f.GetFolderId(), seq, FolderDoc(f))
	return err
}

func (rm *ReadModel) ApplyInvocation(ctx context.Context, seq uint64, inv *testingv1.Invocation) error {
	// An invocation's tests never change: their ids are written once, from
	// the state only creation leaves (running, never resubmitted).
	if inv.GetStatus() == domain.InvocationRunning && len(inv.GetResubmissions()) == 0 {
		if _, err := projection.Upsert(ctx, rm.InvocationTests, inv.GetInvocationId(), seq, InvTestsDoc(inv)); err != nil {
			return err
		}
	}
	_, err := projection.Upsert(ctx, rm.Invocations, inv.GetInvocationId(), seq, InvDoc(inv))
	return err
}

// EntriesHandler projects tests and folders.
func EntriesHandler(_ context.Context, rec eventstore.Record) (string, any, error) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		return "", nil, err
	}
	switch s := StateOf(msg).(type) {
	case *testingv1.Test:
		return s.GetTestId(), TestDoc(s), nil
	case *testingv1.Folder:
		return s.GetFolderId(), FolderDoc(s), nil
	}
	return "", nil, nil
}

// InvocationsHandler projects invocations.
func InvocationsHandler(_ context.Context, rec eventstore.Record) (string, any, error) {
	return invocationHandler(rec, func(inv *testingv1.Invocation) any { return InvDoc(inv) })
}

// InvocationTestsHandler projects invocations' test ids, which only
// invocation_created sets.
func InvocationTestsHandler(_ context.Context, rec eventstore.Record) (string, any, error) {
	if rec.Type != events.TypeInvocationCreated {
		return "", nil, nil
	}
	return invocationHandler(rec, func(inv *testingv1.Invocation) any { return InvTestsDoc(inv) })
}

func invocationHandler(rec eventstore.Record, doc func(*testingv1.Invocation) any) (string, any, error) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		return "", nil, err
	}
	if inv, ok := StateOf(msg).(*testingv1.Invocation); ok {
		return inv.GetInvocationId(), doc(inv), nil
	}
	return "", nil, nil
}

// InvocationsWithTest returns the ids of a workspace's invocations that
// ran test testID.
func (rm *ReadModel) InvocationsWithTest(ctx context.Context, workspaceID, testID string) (map[string]bool, error) {
	cur, err := rm.InvocationTests.Find(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "test_ids", Value: testID}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(docs))
	for _, d := range docs {
		out[d.ID] = true
	}
	return out, nil
}

// EntriesOf returns every live test and folder of a workspace. FerretDB
// scans whatever the filter; listings filter and page in Go.
func (rm *ReadModel) EntriesOf(ctx context.Context, workspaceID string) ([]EntryDoc, error) {
	cur, err := rm.Entries.Find(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "deleted", Value: false}})
	if err != nil {
		return nil, err
	}
	var out []EntryDoc
	return out, cur.All(ctx, &out)
}

// InvocationsOf returns every invocation of a workspace.
func (rm *ReadModel) InvocationsOf(ctx context.Context, workspaceID string) ([]InvocationDoc, error) {
	cur, err := rm.Invocations.Find(ctx, bson.D{{Key: "workspace_id", Value: workspaceID}})
	if err != nil {
		return nil, err
	}
	var out []InvocationDoc
	return out, cur.All(ctx, &out)
}

// Running returns the invocations still running, in every workspace.
func (rm *ReadModel) Running(ctx context.Context) ([]InvocationDoc, error) {
	cur, err := rm.Invocations.Find(ctx, bson.D{{Key: "status", Value: "running"}})
	if err != nil {
		return nil, err
	}
	var out []InvocationDoc
	return out, cur.All(ctx, &out)
}
