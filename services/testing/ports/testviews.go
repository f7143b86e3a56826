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
func invocationView(p app.InvocationProgress) map[string]any {
	rel := ReliabilityView(p.Reliability)
	rel.PassHatK = nil // pass^k belongs to one test's repeats, not to a mix of tests
	return map[string]any{
		"id": p.ID, "agent_id": p.AgentID, "branch_id": p.BranchID, "created_at_unix_secs": p.CreatedAtUnix,
		"test_run_count": p.Runs, "passed_count": p.Passed, "failed_count": p.Failed, "pending_count": p.Pending,
		"cancelled_count": p.Cancelled, "title": p.Title, "repeat_count": p.RepeatCount,
		"cancelled": p.Status == domain.InvocationCancelled, "status": p.Status, "folder_id": p.FolderID,
		"reliability": rel,
	}
}

// entryView is a test or folder in listings (UnitTestSummaryResponseModel).
func entryView(e app.ListedEntry) map[string]any {
	v := map[string]any{
		"id": e.ID, "name": e.Name, "created_at_unix_secs": e.CreatedAtUnix, "last_updated_at_unix_secs": e.UpdatedAtUnix,
		"type": e.Type, "entity_type": e.Kind, "folder_parent_id": nullable(e.ParentFolderID),
		"folder_path": e.FolderPath,
	}
	if e.Kind == app.KindFolder {
		v["children_count"] = e.ChildrenCount
	} else if e.InitSource != "" {
		v["conversation_initiation_source"] = e.InitSource
	}
	return v
}

// folderView is a folder as GET shows it.
func folderView(d app.FolderDetails) map[string]any {
	return map[string]any{"id": d.Folder.GetFolderId(), "name": d.Folder.GetName(), "folder_path": d.FolderPath,
		"children_count": d.ChildrenCount, "parent_folder_id": nullable(d.Folder.GetParentFolderId())}
}
