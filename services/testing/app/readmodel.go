package app

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// ReadModel is what listings, summaries and run-tests read: a workspace's
// live tests and folders and its invocations, each listing one keyset page
// at a time. Two implementations pass one conformance suite
// (readmodeltest): MongoDB, with an index for every listing order, and an
// in-memory index each replica keeps from the stream
// (VOICEAI_READ_INDEX=memory), which reads no store on a request.
type ReadModel interface {
	// ApplyTest, ApplyFolder and ApplyInvocation record state as of a
	// stream sequence; an older sequence than the one held changes nothing.
	ApplyTest(ctx context.Context, seq uint64, t *testingv1.Test) error
	ApplyFolder(ctx context.Context, seq uint64, f *testingv1.Folder) error
	ApplyInvocation(ctx context.Context, seq uint64, inv *testingv1.Invocation) error
	// Entries returns the live tests and folders of a workspace among ids.
	Entries(ctx context.Context, workspaceID string, ids []string) (map[string]Entry, error)
	// ChildCount is how many live tests and folders are directly in a folder.
	ChildCount(ctx context.Context, workspaceID, folderID string) (int, error)
	// PageEntries returns the first q.Limit entries q selects after
	// q.After, in q's order, and whether more follow.
	PageEntries(ctx context.Context, q EntryQuery) ([]Entry, bool, error)
	// PageInvocations does the same for invocations, newest first.
	PageInvocations(ctx context.Context, q InvocationFilter) ([]InvocationSummary, bool, error)
	// Running is every running invocation, in every workspace.
	Running(ctx context.Context) ([]InvocationSummary, error)
	// Active is up to limit of the workspace's running invocations (in
	// no particular order), read from an index of the workspace's running
	// ones: the quotas read it on every run-tests.
	Active(ctx context.Context, workspaceID string, limit int) ([]InvocationSummary, error)
}

// Kinds of entry.
const (
	KindTest   = "test"
	KindFolder = "folder"
)

// Entry is a test or a folder as listed.
type Entry struct {
	ID             string `bson:"_id"`
	WorkspaceID    string `bson:"workspace_id"`
	Kind           string `bson:"kind"` // KindTest or KindFolder
	Name           string `bson:"name"`
	Type           string `bson:"type"` // llm|tool|simulation, or folder
	ParentFolderID string `bson:"parent_folder_id"`
	CreatedBy      string `bson:"created_by_user_id"`
	CreatedAtUnix  int64  `bson:"created_at_unix"`
	// CreatedAtUnixNanos orders the entries of one second (0: created before
	// it was kept; those follow the second's others, by id).
	CreatedAtUnixNanos int64  `bson:"created_at_unix_nanos"`
	UpdatedAtUnix      int64  `bson:"updated_at_unix"`
	InitSource         string `bson:"conversation_initiation_source"`
	Deleted            bool   `bson:"deleted"`
	Seq                int64  `bson:"last_seq"` // run-tests reads a test's definition at this sequence
}

// InvocationSummary is an invocation as listed.
type InvocationSummary struct {
	ID            string `bson:"_id"`
	WorkspaceID   string `bson:"workspace_id"`
	AgentID       string `bson:"agent_id"`
	BranchID      string `bson:"branch_id"`
	Title         string `bson:"title"`
	CreatedAtUnix int64  `bson:"created_at_unix"`
	// CreatedAtUnixNanos orders the invocations of one second (0: created
	// before it was kept; those follow the second's others, by id).
	CreatedAtUnixNanos int64    `bson:"created_at_unix_nanos"`
	RepeatCount        int32    `bson:"repeat_count"`
	JobsTotal          int64    `bson:"jobs_total"`
	Runs               int64    `bson:"runs"`
	Status             string   `bson:"status"`
	FolderID           string   `bson:"folder_id"`
	PassedCount        int64    `bson:"passed_count"`
	FailedCount        int64    `bson:"failed_count"`
	TestIDs            []string `bson:"test_ids"` // distinct, for the test_id filter
	// The newest attempt (1, then one per resubmission) and its runs.
	Attempt     int32 `bson:"attempt"`
	AttemptRuns int64 `bson:"attempt_runs"`
	// How the newest resubmission's runs last ended (PriorKnown: kept
	// since resubmissions record it).
	PriorPassed int64 `bson:"prior_passed,omitempty"`
	PriorFailed int64 `bson:"prior_failed,omitempty"`
	PriorKnown  bool  `bson:"prior_known,omitempty"`
	// Load marks a load test: it has no runs, and its counts are its
	// steps' (Runs its steps, passed and failed those that met and broke
	// its budget so far).
	Load bool `bson:"load,omitempty"`
}

// EntryPosition is where a page of entries ends: listings continue after
// it. Listings are newest first: by the second of creation, then the
// nanosecond, then the id (a keyed entry's id is a digest), with every
// folder first when asked.
type EntryPosition struct {
	Folder       bool // only ordered by with FoldersFirst
	Created      int64
	CreatedNanos int64
	ID           string
}

// Compare orders positions as listings do, descending: it is negative when
// p comes after o in a listing. foldersFirst puts every folder first.
func (p EntryPosition) Compare(o EntryPosition, foldersFirst bool) int {
	if foldersFirst && p.Folder != o.Folder {
		if p.Folder {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(p.Created, o.Created), cmp.Compare(p.CreatedNanos, o.CreatedNanos), strings.Compare(p.ID, o.ID))
}

// PositionOf is e's place in listings.
func (e Entry) PositionOf() EntryPosition {
	return EntryPosition{Folder: e.Kind == KindFolder, Created: e.CreatedAtUnix, CreatedNanos: e.CreatedAtUnixNanos, ID: e.ID}
}

// EntryQuery selects entries of one workspace. Parent, kinds and the
// order are served by an index; types, creator and search filter what the
// index yields (the search a bounded scan: it stops at a page of matches).
type EntryQuery struct {
	WorkspaceID  string
	Parent       *string // nil: anywhere; "": the root
	Folders      bool    // folders are listed
	Tests        bool    // tests are listed
	TestTypes    []string
	CreatedBy    string
	NotCreatedBy string
	Search       string // in the name, any case
	FoldersFirst bool
	After        *EntryPosition
	Limit        int
}

// Matches is the meaning of the query's filters; each implementation
// selects exactly this.
func (q EntryQuery) Matches(e Entry) bool {
	switch {
	case e.WorkspaceID != q.WorkspaceID, e.Deleted,
		e.Kind == KindFolder && !q.Folders,
		e.Kind == KindTest && !q.Tests,
		e.Kind == KindTest && len(q.TestTypes) > 0 && !slices.Contains(q.TestTypes, e.Type),
		q.Parent != nil && e.ParentFolderID != *q.Parent,
		q.CreatedBy != "" && e.CreatedBy != q.CreatedBy,
		q.NotCreatedBy != "" && e.CreatedBy == q.NotCreatedBy,
		q.Search != "" && !strings.Contains(strings.ToLower(e.Name), strings.ToLower(q.Search)):
		return false
	}
	return q.After == nil || e.PositionOf().Compare(*q.After, q.FoldersFirst) < 0
}

// InvocationPosition is where a page of invocations ends. Listings are
// newest first: by the second of creation, then the nanosecond, then the
// id (a keyed invocation's id is a digest, and one millisecond holds
// several creates in a row: only the nanosecond orders the invocations of
// one second as they were made).
type InvocationPosition struct {
	Created      int64
	CreatedNanos int64
	ID           string
}

// PositionOf is s's place in listings.
func (s InvocationSummary) PositionOf() InvocationPosition {
	return InvocationPosition{Created: s.CreatedAtUnix, CreatedNanos: s.CreatedAtUnixNanos, ID: s.ID}
}

// Compare orders positions as listings do, descending: it is negative when
// p comes after o in a listing.
func (p InvocationPosition) Compare(o InvocationPosition) int {
	return cmp.Or(cmp.Compare(p.Created, o.Created), cmp.Compare(p.CreatedNanos, o.CreatedNanos), strings.Compare(p.ID, o.ID))
}

// Before reports whether s is listed after p (listings are newest first).
func (p InvocationPosition) Before(s InvocationSummary) bool {
	return s.PositionOf().Compare(p) < 0
}

// InvocationFilter selects invocations of one workspace. Agent and test
// are served by an index; branch, search and the time range filter what
// it yields (the time range also bounds where the scan starts and stops).
type InvocationFilter struct {
	WorkspaceID, AgentID, BranchID, TestID, Search string
	StartTime, EndTime                             *int64
	After                                          *InvocationPosition
	Limit                                          int
}

// Branches are the branch ids stored on the invocations BranchID
// selects: main is also what an invocation that named no branch ran
// (stored ""). Nil: no branch filter.
func (f InvocationFilter) Branches() []string {
	switch f.BranchID {
	case "":
		return nil
	case MainBranch:
		return []string{"", MainBranch}
	}
	return []string{f.BranchID}
}

// Matches is the meaning of the filter.
func (f InvocationFilter) Matches(s InvocationSummary) bool {
	switch {
	case s.WorkspaceID != f.WorkspaceID,
		f.AgentID != "" && s.AgentID != f.AgentID,
		f.BranchID != "" && !slices.Contains(f.Branches(), s.BranchID),
		f.TestID != "" && !slices.Contains(s.TestIDs, f.TestID),
		f.Search != "" && !strings.Contains(strings.ToLower(s.Title), strings.ToLower(f.Search)),
		f.StartTime != nil && s.CreatedAtUnix < *f.StartTime,
		f.EndTime != nil && s.CreatedAtUnix > *f.EndTime:
		return false
	}
	return f.After == nil || f.After.Before(s)
}

// TestEntry maps test state to its entry.
func TestEntry(t *testingv1.Test) Entry {
	def, _ := domain.ParseDefinition(t.GetDefinitionJson())
	src := ""
	if def.ConversationInitiationSource != nil {
		src = *def.ConversationInitiationSource
	}
	return Entry{ID: t.GetTestId(), WorkspaceID: t.GetWorkspaceId(), Kind: KindTest, Name: t.GetName(), Type: t.GetType(),
		ParentFolderID: t.GetParentFolderId(), CreatedBy: t.GetCreatedByUserId(), CreatedAtUnix: t.GetCreatedAtUnix(),
		CreatedAtUnixNanos: t.GetCreatedAtUnixNanos(), UpdatedAtUnix: t.GetUpdatedAtUnix(), InitSource: src, Deleted: t.DeletedAtUnix != nil}
}

// FolderEntry maps folder state to its entry.
func FolderEntry(f *testingv1.Folder) Entry {
	return Entry{ID: f.GetFolderId(), WorkspaceID: f.GetWorkspaceId(), Kind: KindFolder, Name: f.GetName(), Type: domain.TypeFolder,
		ParentFolderID: f.GetParentFolderId(), CreatedBy: f.GetCreatedByUserId(), CreatedAtUnix: f.GetCreatedAtUnix(),
		CreatedAtUnixNanos: f.GetCreatedAtUnixNanos(), UpdatedAtUnix: f.GetUpdatedAtUnix(), Deleted: f.DeletedAtUnix != nil}
}

// SummaryOf maps invocation state to its listed form.
func SummaryOf(inv *testingv1.Invocation) InvocationSummary {
	s := InvocationSummary{ID: inv.GetInvocationId(), WorkspaceID: inv.GetWorkspaceId(), AgentID: inv.GetAgentId(), BranchID: inv.GetBranchId(),
		Title: inv.GetTitle(), CreatedAtUnix: inv.GetCreatedAtUnix(), CreatedAtUnixNanos: inv.GetCreatedAtUnixNanos(),
		RepeatCount: inv.GetRepeatCount(), JobsTotal: inv.GetJobsTotal(), Status: inv.GetStatus(), FolderID: inv.GetFolderId(), Attempt: 1}
	if load := inv.GetLoad(); load != nil {
		loadCounts(&s, load)
		return s
	}
	s.Runs = int64(len(inv.GetTests())) * int64(max(inv.GetRepeatCount(), 1))
	s.AttemptRuns, s.PassedCount, s.FailedCount = s.Runs, inv.GetPassedCount(), inv.GetFailedCount()
	if rs := inv.GetResubmissions(); len(rs) > 0 {
		last := rs[len(rs)-1]
		s.Attempt, s.AttemptRuns = last.GetAttempt(), int64(len(last.GetRunIds()))
		s.PriorPassed, s.PriorFailed, s.PriorKnown = last.GetPriorPassed(), last.GetPriorFailed(), last.GetPriorKnown()
	}
	s.TestIDs = make([]string, 0, len(inv.GetTests()))
	seen := make(map[string]bool, len(inv.GetTests()))
	for _, t := range inv.GetTests() {
		if !seen[t.GetTestId()] {
			seen[t.GetTestId()] = true
			s.TestIDs = append(s.TestIDs, t.GetTestId())
		}
	}
	return s
}

// loadCounts are a load test's counts as listed: its steps. It names no
// test (TestIDs): a test's reliability, which pages invocations by test,
// is of runs, and a load test has none.
func loadCounts(s *InvocationSummary, load *testingv1.LoadTest) {
	s.Load, s.Runs = true, int64(len(load.GetSteps()))
	s.AttemptRuns = s.Runs
	results := load.GetResults()
	// A cancel's stopped step keeps figures at the current step: it neither
	// met nor broke the budget.
	for _, r := range results[:min(len(results), int(load.GetCurrentStep()))] {
		if r.GetMetBudget() {
			s.PassedCount++
		} else {
			s.FailedCount++
		}
	}
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
