package wire

// TestEntry is a test or a folder as the tests listing and the summaries
// by id show it (schema TestEntry, UnitTestSummaryResponseModel).
type TestEntry struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Type           string            `json:"type"`        // llm, tool or simulation; a folder's is empty
	EntityType     string            `json:"entity_type"` // test or folder
	CreatedAtUnix  int64             `json:"created_at_unix_secs"`
	UpdatedAtUnix  int64             `json:"last_updated_at_unix_secs"`
	FolderParentID *string           `json:"folder_parent_id"` // null: the root
	FolderPath     []FolderPathEntry `json:"folder_path"`      // the folders above it, root first
	// ChildrenCount is a folder's (absent for a test).
	ChildrenCount *int `json:"children_count,omitempty"`
	// InitSource is how a test made from a conversation began (absent
	// otherwise).
	InitSource string `json:"conversation_initiation_source,omitempty"`
}

// FolderPathEntry is one folder of a path.
type FolderPathEntry struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Folder is a folder as GET shows it (schema Folder).
type Folder struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	ParentFolderID *string           `json:"parent_folder_id"` // null: the root
	ChildrenCount  int               `json:"children_count"`
	FolderPath     []FolderPathEntry `json:"folder_path"` // root first, the folder last
}

// InvocationSummary is a test invocation as its listing shows it (schema
// InvocationSummary).
type InvocationSummary struct {
	ID            string `json:"id"`
	AgentID       string `json:"agent_id"`
	BranchID      string `json:"branch_id"`
	FolderID      string `json:"folder_id"`
	Title         string `json:"title"`
	Status        string `json:"status"`
	Cancelled     bool   `json:"cancelled"`
	CreatedAtUnix int64  `json:"created_at_unix_secs"`
	Runs          int64  `json:"test_run_count"`
	Passed        int64  `json:"passed_count"`
	Failed        int64  `json:"failed_count"`
	Pending       int64  `json:"pending_count"`   // not yet done
	CancelledRuns int64  `json:"cancelled_count"` // cancelled before they ran
	RepeatCount   int32  `json:"repeat_count"`
	// Reliability is over its finished runs, without pass^k (which belongs
	// to one test's repeats, not to a mix of tests).
	Reliability Reliability `json:"reliability"`
}
