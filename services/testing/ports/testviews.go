package ports

import (
	"encoding/json"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// TestView is a test as GET shows it: its definition plus id, name, type.
func TestView(t *testingv1.Test) map[string]any {
	out := map[string]any{}
	_ = json.Unmarshal(t.GetDefinitionJson(), &out)
	out["id"], out["name"], out["type"] = t.GetTestId(), t.GetName(), t.GetType()
	out["parent_folder_id"] = nullable(t.GetParentFolderId())
	out["created_at_unix_secs"], out["last_updated_at_unix_secs"] = t.GetCreatedAtUnix(), t.GetUpdatedAtUnix()
	return out
}

// ReliabilityView is the wire form of reliability figures.
func ReliabilityView(r domain.Reliability) wire.Reliability {
	return wire.Reliability{Runs: r.Runs, Passed: r.Passed, PassRate: round3(r.PassRate),
		PassRateCI95: []float64{round3(r.Low), round3(r.High)}, PassHatK: &wire.PassHatK{K: r.K, Value: round3(r.PassHatK)}}
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// invocationView is an invocation in the listing (a summary).
func invocationView(p app.InvocationProgress) wire.InvocationSummary {
	rel := ReliabilityView(p.Reliability)
	rel.PassHatK = nil // pass^k belongs to one test's repeats, not to a mix of tests
	return wire.InvocationSummary{
		ID: p.ID, AgentID: p.AgentID, BranchID: p.BranchID, FolderID: p.FolderID, Title: p.Title, Status: p.Status,
		Cancelled: p.Status == domain.InvocationCancelled, CreatedAtUnix: p.CreatedAtUnix,
		Runs: p.Runs, Passed: p.Passed, Failed: p.Failed, Pending: p.Pending, CancelledRuns: p.Cancelled, RepeatCount: p.RepeatCount,
		Reliability: rel,
	}
}

// entryView is a test or folder in listings (UnitTestSummaryResponseModel).
func entryView(e app.ListedEntry) wire.TestEntry {
	v := wire.TestEntry{
		ID: e.ID, Name: e.Name, Type: e.Type, EntityType: e.Kind, CreatedAtUnix: e.CreatedAtUnix, UpdatedAtUnix: e.UpdatedAtUnix,
		FolderParentID: nullable(e.ParentFolderID), FolderPath: folderPathView(e.FolderPath),
	}
	if e.Kind == app.KindFolder {
		v.ChildrenCount = &e.ChildrenCount
	} else {
		v.InitSource = e.InitSource
	}
	return v
}

// folderView is a folder as GET shows it.
func folderView(d app.FolderDetails) wire.Folder {
	return wire.Folder{ID: d.Folder.GetFolderId(), Name: d.Folder.GetName(), FolderPath: folderPathView(d.FolderPath),
		ChildrenCount: d.ChildrenCount, ParentFolderID: nullable(d.Folder.GetParentFolderId())}
}

// folderPathView is a path of folders, root first.
func folderPathView(path []app.FolderRef) []wire.FolderPathEntry {
	out := make([]wire.FolderPathEntry, len(path))
	for i, f := range path {
		out[i] = wire.FolderPathEntry{ID: f.ID, Name: f.Name}
	}
	return out
}
