package app

import (
	"context"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/adapters"
)

// ReadModel is what listings, summaries and run-tests read: a
// workspace's live tests and folders, its invocations, and which
// invocations ran a test. Two implementations pass one conformance suite
// (adapters' readmodel_test): MongoDB, and a mirror in memory each
// replica keeps from the stream (VOICEAI_READ_INDEX=memory), which reads
// no store on a request.
type ReadModel interface {
	ApplyTest(ctx context.Context, seq uint64, t *testingv1.Test) error
	ApplyFolder(ctx context.Context, seq uint64, f *testingv1.Folder) error
	ApplyInvocation(ctx context.Context, seq uint64, inv *testingv1.Invocation) error
	// EntriesOf is every live test and folder of a workspace.
	EntriesOf(ctx context.Context, workspaceID string) ([]adapters.EntryDoc, error)
	// InvocationsOf is every invocation of a workspace.
	InvocationsOf(ctx context.Context, workspaceID string) ([]adapters.InvocationDoc, error)
	// InvocationsWithTest is the ids of a workspace's invocations that ran testID.
	InvocationsWithTest(ctx context.Context, workspaceID, testID string) (map[string]bool, error)
	// Running is every running invocation, in every workspace.
	Running(ctx context.Context) ([]adapters.InvocationDoc, error)
}
