// Package app holds the testing use cases: tests and folders (aggregates
// on stream TESTING, listed from Mongo), and invocations, whose runs are
// queued on TESTJOBS and whose results are read from TESTRUNS.
package app

import (
	"log/slog"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/slots"
)

// App is the testing application.
type App struct {
	Tests   *aggregate.Repo[*testingv1.Test]
	Folders *aggregate.Repo[*testingv1.Folder]
	// Trees are the workspaces' folder trees, whose versions order moves.
	Trees       *aggregate.Repo[*testingv1.FolderTree]
	Invocations *aggregate.Repo[*testingv1.Invocation]
	ReadModel   ReadModel
	Agents      eventlog.Store // agents, read for an agent's configuration
	Runs        RunsLog
	Jobs        JobQueue
	Counters    Counters
	Feed        InvocationFeed
	// Conversations, when set, lets a regression test be made from a
	// recorded conversation by its id.
	Conversations StoredConversations
	// ConversationDocuments, when set (the runners), reads a recorded
	// conversation whole, as its GET answers it: a re-judged analysis is
	// answered in that shape.
	ConversationDocuments ConversationDocuments
	// ConversationKeys are the conversations' data keys (the tickets
	// service's): an analysis of a conversation is sealed under its key,
	// so deleting the conversation makes it unreadable. Without them no
	// analysis is recorded or read.
	ConversationKeys convseal.Keys
	// ConversationDeleted, when set, tells a deleted conversation: a test
	// made from one says so.
	ConversationDeleted func(workspaceID, conversationID string) bool
	// Cursors signs the listings' cursors.
	Cursors *cursor.Codec
	// Scans bounds the reads of the runs log this process makes at once
	// (see scan).
	Scans *slots.Fair
	// Limits are the workspaces' quotas and the run retention.
	Limits Limits
	// QuotaRefused, when set, is told of each request a quota refused.
	QuotaRefused func(quota string)
	// WritesHeld, when set, says why the process must not queue work now
	// (its disk nearly full), or nil: the enqueuer's feed holds then, and
	// the completion sweeper queues no round it missed.
	WritesHeld func() error
	// HostAllowed is the operator's outbound allow-list: an override's
	// own endpoint (custom_llm) is checked under the rules an agent's is.
	HostAllowed func(host string) bool
	Log         *slog.Logger
	Now         func() time.Time
}

// New wires the application. rm may be nil for processes without a read
// model (runner workers).
func New(p Ports, rm ReadModel, log *slog.Logger, now func() time.Time) *App {
	a := &App{ReadModel: rm, Agents: p.Agents, Runs: p.Runs, Jobs: p.Jobs, Counters: p.Counts, Feed: p.Invocations, Log: log, Now: now,
		Scans: slots.New(MaxScans, MaxScans/2)}
	subject := func(kind string) func(string, string) (string, error) {
		return func(ws, id string) (string, error) { return events.TestingSubject(ws, kind, id) }
	}
	env := aggregate.Env{Store: p.Testing, Log: log, Now: now}
	a.Tests = &aggregate.Repo[*testingv1.Test]{
		Env: env, Subject: subject(events.TestingKindTest),
		Gone:     func(s *testingv1.Test) bool { return s.DeletedAtUnix != nil },
		Touch:    func(s *testingv1.Test, t time.Time) { s.UpdatedAtUnix = t.Unix() },
		NotFound: apperr.TestNotFound,
	}
	a.Folders = &aggregate.Repo[*testingv1.Folder]{
		Env: env, Subject: subject(events.TestingKindFolder),
		Gone:     func(s *testingv1.Folder) bool { return s.DeletedAtUnix != nil },
		Touch:    func(s *testingv1.Folder, t time.Time) { s.UpdatedAtUnix = t.Unix() },
		NotFound: apperr.FolderNotFound,
	}
	a.Trees = &aggregate.Repo[*testingv1.FolderTree]{
		Env: env, Subject: subject(events.TestingKindTree),
		Touch:    func(s *testingv1.FolderTree, t time.Time) { s.UpdatedAtUnix = t.Unix() },
		NotFound: errNoMoves,
	}
	a.Invocations = &aggregate.Repo[*testingv1.Invocation]{
		Env: env, Subject: subject(events.TestingKindInvocation),
		Gone:     func(*testingv1.Invocation) bool { return false },
		NotFound: apperr.InvocationNotFound,
	}
	if rm != nil {
		a.Tests.Project = rm.ApplyTest
		a.Folders.Project = rm.ApplyFolder
		a.Invocations.Project = rm.ApplyInvocation
	}
	return a
}
