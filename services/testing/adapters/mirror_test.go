package adapters

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// readModel is what both implementations serve (app.ReadModel; app
// imports this package, so it is restated here).
type readModel interface {
	ApplyTest(context.Context, uint64, *testingv1.Test) error
	ApplyFolder(context.Context, uint64, *testingv1.Folder) error
	ApplyInvocation(context.Context, uint64, *testingv1.Invocation) error
	EntriesOf(context.Context, string) ([]EntryDoc, error)
	InvocationsOf(context.Context, string) ([]InvocationDoc, error)
	InvocationsWithTest(context.Context, string, string) (map[string]bool, error)
	Running(context.Context) ([]InvocationDoc, error)
}

// conform applies one history to rm — creations, changes, deletions and
// stale redeliveries — and checks every read against what it means.
func conform(t *testing.T, rm readModel) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	deleted := int64(5)
	must(rm.ApplyFolder(ctx, 1, &testingv1.Folder{FolderId: "tfld_1", WorkspaceId: "ws_a", Name: "f"}))
	must(rm.ApplyTest(ctx, 2, &testingv1.Test{TestId: "test_1", WorkspaceId: "ws_a", Name: "one", Type: "llm", ParentFolderId: "tfld_1"}))
	must(rm.ApplyTest(ctx, 3, &testingv1.Test{TestId: "test_2", WorkspaceId: "ws_a", Name: "two", Type: "tool"}))
	must(rm.ApplyTest(ctx, 4, &testingv1.Test{TestId: "test_3", WorkspaceId: "ws_b", Name: "other", Type: "llm"}))
	must(rm.ApplyTest(ctx, 6, &testingv1.Test{TestId: "test_2", WorkspaceId: "ws_a", Name: "two", Type: "tool", DeletedAtUnix: &deleted}))
	must(rm.ApplyTest(ctx, 3, &testingv1.Test{TestId: "test_2", WorkspaceId: "ws_a", Name: "two", Type: "tool"})) // stale: stays deleted
	must(rm.ApplyTest(ctx, 7, &testingv1.Test{TestId: "test_1", WorkspaceId: "ws_a", Name: "renamed", Type: "llm", ParentFolderId: "tfld_1"}))
	running := &testingv1.Invocation{InvocationId: "tinv_1", WorkspaceId: "ws_a", Status: domain.InvocationRunning, RepeatCount: 2,
		Tests: []*testingv1.PlannedTest{{TestId: "test_1"}, {TestId: "test_1"}}}
	must(rm.ApplyInvocation(ctx, 8, running))
	done := &testingv1.Invocation{InvocationId: "tinv_2", WorkspaceId: "ws_a", Status: domain.InvocationRunning,
		Tests: []*testingv1.PlannedTest{{TestId: "test_2"}}}
	must(rm.ApplyInvocation(ctx, 9, done))
	finished := proto.Clone(done).(*testingv1.Invocation)
	finished.Status, finished.PassedCount = domain.InvocationCompleted, 1
	must(rm.ApplyInvocation(ctx, 10, finished))
	must(rm.ApplyInvocation(ctx, 9, done)) // stale

	entries, err := rm.EntriesOf(ctx, "ws_a")
	must(err)
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s:%s:%s:%s:%d", e.ID, e.Kind, e.Name, e.ParentFolderID, e.Seq))
	}
	slices.Sort(got)
	if want := []string{"test_1:test:renamed:tfld_1:7", "tfld_1:folder:f::1"}; !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	invs, err := rm.InvocationsOf(ctx, "ws_a")
	must(err)
	got = nil
	for _, d := range invs {
		got = append(got, fmt.Sprintf("%s:%s:%d:%d", d.ID, d.Status, d.Runs, d.PassedCount))
	}
	slices.Sort(got)
	if want := []string{"tinv_1:running:4:0", "tinv_2:completed:1:1"}; !slices.Equal(got, want) {
		t.Errorf("invocations %v, want %v", got, want)
	}
	with, err := rm.InvocationsWithTest(ctx, "ws_a", "test_2")
	must(err)
	if len(with) != 1 || !with["tinv_2"] {
		t.Errorf("invocations with test_2: %v", with)
	}
	if none, _ := rm.InvocationsWithTest(ctx, "ws_b", "test_2"); len(none) != 0 {
		t.Errorf("another workspace's invocations: %v", none)
	}
	run, err := rm.Running(ctx)
	must(err)
	if len(run) != 1 || run[0].ID != "tinv_1" {
		t.Errorf("running %+v", run)
	}
}

func TestMirrorConforms(t *testing.T) { conform(t, NewMirror()) }

func TestStoreConforms(t *testing.T) {
	rm, err := NewReadModel(context.Background(), testenv.New(t).Mongo(t).Database("conformance"))
	if err != nil {
		t.Fatal(err)
	}
	conform(t, rm)
}
