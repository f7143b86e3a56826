package events

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Streams, subjects and event types of the testing service (agent tests,
// invocations and their runs). See README.md, "Testing".
const (
	// TestingStream holds tests, folders and invocations:
	// testing.evt.<workspace_id>.<kind>.<id>, kind test|folder|invocation.
	TestingStream        = "TESTING"
	TestingSubjectPrefix = "testing.evt"
	TestingAll           = "testing.evt.>"
	// TestingInvocationsAll matches invocation events of every workspace.
	TestingInvocationsAll = "testing.evt.*.invocation.*"

	// TestRunsStream holds run results, result groups and reviewers'
	// labels of runs:
	// testruns.evt.<workspace_id>.<invocation_id>.<run_id>,
	// testruns.grp.<workspace_id>.<invocation_id>.<test_index> and
	// testruns.lbl.<workspace_id>.<invocation_id>.<run_id>; a failed run's
	// result again, testruns.fail.<workspace_id>.<invocation_id>.<run_id>
	// (RunFailureSubject); a recorded
	// conversation's analyses and labels,
	// testruns.cnv.<workspace_id>.<conversation_id> and
	// testruns.clbl.<workspace_id>.<conversation_id>; another judge's votes
	// on labelled runs,
	// testruns.rjv.<workspace_id>.<model_key>.<invocation_id>.<run_id>; and, not
	// events, the queued-job totals and completion claims
	// (TestRunsQueuedSubject, TestRunsCompletingSubject).
	TestRunsStream = "TESTRUNS"
	TestRunsAll    = "testruns.>"

	// TestJobsStream is the runners' work queue (WorkQueue retention):
	// testjobs.<workspace_id>.<invocation_id>.<first run_id>, and
	// testjobs.<workspace_id>.<invocation_id>.bucketing.<jobs_total>.
	TestJobsStream = "TESTJOBS"
	TestJobsAll    = "testjobs.>"
	// TestJobsQueuedNotify is a core NATS subject (no stream holds it):
	// the enqueuer publishes an empty message on it after queuing jobs, so
	// idle runners look at the queues at once instead of polling them.
	TestJobsQueuedNotify = "testing.jobs.queued"

	// TestCountsStream holds per-invocation counters (NATS message
	// counters): testcounts.<invocation_id>.<attempt>.<done|passed>.
	TestCountsStream = "TESTCOUNTS"
	TestCountsAll    = "testcounts.>"
)

// Testing kinds: the fourth token of a TESTING subject.
const (
	TestingKindTest       = "test"
	TestingKindFolder     = "folder"
	TestingKindInvocation = "invocation"
	// TestingKindTree is a workspace's folder tree, one per workspace
	// (id FolderTreeID): its versions order the moves of folders.
	TestingKindTree = "tree"
	FolderTreeID    = "folders"
)

// Event types of the testing service.
const (
	TypeTestCreated           = "testing.test_created"
	TypeTestUpdated           = "testing.test_updated"
	TypeTestDeleted           = "testing.test_deleted"
	TypeFolderCreated         = "testing.folder_created"
	TypeFolderUpdated         = "testing.folder_updated"
	TypeFolderDeleted         = "testing.folder_deleted"
	TypeFoldersMoved          = "testing.folders_moved"
	TypeInvocationCreated     = "testing.invocation_created"
	TypeInvocationResubmitted = "testing.invocation_resubmitted"
	TypeInvocationCancelled   = "testing.invocation_cancelled"
	TypeInvocationCompleted   = "testing.invocation_completed"
	TypeBucketingCompleted    = "testing.bucketing_completed"
	TypeBucketingFailed       = "testing.bucketing_failed"
	TypeRunCompleted          = "testing.run_completed"
	TypeResultGroupComputed   = "testing.result_group_computed"
	TypeRunLabelled           = "testing.run_labelled"
	TypeConversationAnalysed  = "testing.conversation_analysed"
	TypeConversationLabelled  = "testing.conversation_labelled"
	TypeRunRejudged           = "testing.run_rejudged"
	TypeLoadStepCompleted     = "testing.load_step_completed"
	TypeLoadSamplesRecorded   = "testing.load_samples_recorded"
)

// TestingSubject is the subject of a test, folder or invocation.
func TestingSubject(workspaceID, kind, id string) (string, error) {
	if err := checkIDs("workspace id", workspaceID, "kind", kind, "id", id); err != nil {
		return "", err
	}
	return TestingSubjectPrefix + "." + workspaceID + "." + kind + "." + id, nil
}

// RunSubject is the subject of a run's results.
func RunSubject(workspaceID, invocationID, runID string) (string, error) {
	if err := checkIDs("workspace id", workspaceID, "invocation id", invocationID, "run id", runID); err != nil {
		return "", err
	}
	return "testruns.evt." + workspaceID + "." + invocationID + "." + runID, nil
}

// RunsOfInvocation matches the run results of one invocation.
func RunsOfInvocation(workspaceID, invocationID string) (string, error) {
	return joinChecked("testruns.evt", "*", workspaceID, invocationID)
}

// RunFailureSubject is where a failed run's result is published a second
// time, beside RunSubject, for the readers of failed runs alone (the QA
// worker): a JetStream consumer filters on subjects, not on headers, so
// it would otherwise be handed every passing run of a large invocation to
// skip.
func RunFailureSubject(workspaceID, invocationID, runID string) (string, error) {
	return joinChecked("testruns.fail", "", workspaceID, invocationID, runID)
}

// RunFailuresAll matches every failed run of every workspace.
const RunFailuresAll = "testruns.fail.>"

// RunLabelSubject is the subject of a run's labels (a reviewer's
// judgement of its verdict): every label is kept, the last is current.
func RunLabelSubject(workspaceID, invocationID, runID string) (string, error) {
	return joinChecked("testruns.lbl", "", workspaceID, invocationID, runID)
}

// RunLabelsOfInvocation matches the labels of one invocation's runs.
func RunLabelsOfInvocation(workspaceID, invocationID string) (string, error) {
	return joinChecked("testruns.lbl", "*", workspaceID, invocationID)
}

// RunLabelsOfWorkspace matches the labels of every run of a workspace.
func RunLabelsOfWorkspace(workspaceID string) (string, error) {
	return joinChecked("testruns.lbl", ">", workspaceID)
}

// ConversationAnalysisSubject is the subject of a recorded conversation's
// analyses (its criteria judged again): every one is kept, the last is
// current.
func ConversationAnalysisSubject(workspaceID, conversationID string) (string, error) {
	return joinChecked("testruns.cnv", "", workspaceID, conversationID)
}

// ConversationAnalysesAll matches every conversation analysis.
const ConversationAnalysesAll = "testruns.cnv.>"

// ConversationLabelSubject is the subject of a conversation's labels (a
// reviewer's judgement of its analysis): the last is current.
func ConversationLabelSubject(workspaceID, conversationID string) (string, error) {
	return joinChecked("testruns.clbl", "", workspaceID, conversationID)
}

// ConversationLabelsOfWorkspace matches the labels of every conversation
// of a workspace.
func ConversationLabelsOfWorkspace(workspaceID string) (string, error) {
	return joinChecked("testruns.clbl", ">", workspaceID)
}

// Every label of every workspace: runs' and conversations'.
const (
	RunLabelsAll          = "testruns.lbl.>"
	ConversationLabelsAll = "testruns.clbl.>"
)

// JudgeModelKey is a judge model's name as one subject token (a model's
// name may hold dots): "m" and 16 hex digits of its SHA-256.
func JudgeModelKey(model string) string {
	h := sha256.Sum256([]byte(model))
	return "m" + hex.EncodeToString(h[:8])
}

// RejudgeSubject is the subject of one judge model's votes on a run it
// judged again: the last is that model's current vote.
func RejudgeSubject(workspaceID, model, invocationID, runID string) (string, error) {
	return joinChecked("testruns.rjv", "", workspaceID, JudgeModelKey(model), invocationID, runID)
}

// RejudgesOfWorkspace matches every judge model's votes on a workspace's
// runs.
func RejudgesOfWorkspace(workspaceID string) (string, error) {
	return joinChecked("testruns.rjv", ">", workspaceID)
}

// RejudgesOfModel matches one judge model's votes on a workspace's runs.
func RejudgesOfModel(workspaceID, model string) (string, error) {
	return joinChecked("testruns.rjv", ">", workspaceID, JudgeModelKey(model))
}

// ResultGroupSubject is the subject of one test's result group.
func ResultGroupSubject(workspaceID, invocationID, testIndex string) (string, error) {
	return joinChecked("testruns.grp", "", workspaceID, invocationID, testIndex)
}

// ResultGroupsOfInvocation matches the result groups of one invocation.
func ResultGroupsOfInvocation(workspaceID, invocationID string) (string, error) {
	return joinChecked("testruns.grp", "*", workspaceID, invocationID)
}

// TestRunsQueuedSubject holds, as decimal text, how many jobs of an
// invocation are queued in all (not an event).
func TestRunsQueuedSubject(workspaceID, invocationID string) (string, error) {
	return joinChecked("testruns.queued", "", workspaceID, invocationID)
}

// TestRunsCompletingSubject holds a runner's claim to complete a round of
// an invocation (not an event).
func TestRunsCompletingSubject(workspaceID, invocationID string) (string, error) {
	return joinChecked("testruns.completing", "", workspaceID, invocationID)
}

// TestJobSubject is the work-queue subject of a job.
func TestJobSubject(workspaceID, invocationID, job string) (string, error) {
	return joinChecked("testjobs", "", workspaceID, invocationID, job)
}

// TestBucketingJobSubject is the work-queue subject of an invocation's
// bucketing job for round (its jobs total when it completed).
func TestBucketingJobSubject(workspaceID, invocationID, round string) (string, error) {
	return joinChecked("testjobs", "", workspaceID, invocationID, "bucketing", round)
}

// TestJobsOfInvocation matches the queued jobs of one invocation (for
// purging them on cancel).
func TestJobsOfInvocation(workspaceID, invocationID string) (string, error) {
	return joinChecked("testjobs", "*", workspaceID, invocationID)
}

// TestJobQueueFilter matches every job of one invocation, runs and
// bucketing: the filter of the invocation's queue (its consumer).
func TestJobQueueFilter(workspaceID, invocationID string) (string, error) {
	return joinChecked("testjobs", ">", workspaceID, invocationID)
}

// LoadSamplesSubject is where one job of a load test's step stores what
// it measured.
func LoadSamplesSubject(workspaceID, invocationID string, step, job int) (string, error) {
	return joinChecked("testruns.load", "", workspaceID, invocationID, strconv.Itoa(step), strconv.Itoa(job))
}

// LoadSamplesOfStep matches the samples of every job of one step.
func LoadSamplesOfStep(workspaceID, invocationID string, step int) (string, error) {
	return joinChecked("testruns.load", "*", workspaceID, invocationID, strconv.Itoa(step))
}

// LoadJobSubject is the work-queue subject of one job of a load test's
// step: testjobs.<workspace_id>.<invocation_id>.load-<step>-<job>, one
// token like a run job's, so a cancel purges it and completion sees it.
func LoadJobSubject(workspaceID, invocationID string, step, job int) (string, error) {
	return joinChecked("testjobs", "", workspaceID, invocationID, "load-"+strconv.Itoa(step)+"-"+strconv.Itoa(job))
}

// TestCountSubject is a counter of an invocation's attempt (1, then one
// per resubmission): "done" or "passed".
func TestCountSubject(invocationID string, attempt int32, counter string) (string, error) {
	return joinChecked("testcounts", "", invocationID, strconv.Itoa(int(attempt)), counter)
}

// Headers of a testing.run_completed message, beside the event headers:
// a run's outcome is readable without decoding the event (a reader can
// take them with a headers-only consumer).
const (
	// HeaderRunStatus is the run's status: RunStatusPassed or
	// RunStatusFailed.
	HeaderRunStatus = "Voiceai-Run-Status"
	// HeaderRunAttempt is the attempt the result is of: 1, then one per
	// resubmission.
	HeaderRunAttempt = "Voiceai-Run-Attempt"
)

// The values of HeaderRunStatus.
const (
	RunStatusPassed = "passed"
	RunStatusFailed = "failed"
)

// joinChecked is prefix.<token>… (then .wildcard when not empty), every
// token checked by ValidateToken.
func joinChecked(prefix, wildcard string, tokens ...string) (string, error) {
	var b strings.Builder
	b.WriteString(prefix)
	for i, t := range tokens {
		if err := ValidateToken(t); err != nil {
			return "", fmt.Errorf("token %d of %s: %w", i+1, prefix, err)
		}
		b.WriteByte('.')
		b.WriteString(t)
	}
	if wildcard != "" {
		b.WriteByte('.')
		b.WriteString(wildcard)
	}
	return b.String(), nil
}
