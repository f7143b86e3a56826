package app

import (
	"context"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
)

// The testing service's judge and its reviewers speak of conversations
// and runs; this service shows what they said where people look: a
// conversation's latest analysis on the conversation, and the current
// labels of a ticket's runs and conversations on the ticket. Both are
// projections of the testing events (testing.conversation_analysed,
// testing.run_labelled, testing.conversation_labelled) into this
// service's store: nothing asks the testing service on read.

// Analysis is a conversation's latest re-judged analysis.
type Analysis struct {
	AnalysisID        string
	AgentID           string
	Criteria          []CriterionVerdict
	CallSuccessful    string
	TranscriptSummary string
	JudgeProvider     string
	JudgeModel        string
	AnalysedAtMs      int64
}

// CriterionVerdict is the judge's verdict on one evaluation criterion.
type CriterionVerdict struct {
	ID, Name, Result, Rationale string
}

// Kinds of what a verdict label reviewed.
const (
	LabelOfRun          = "run"
	LabelOfConversation = "conversation"
)

// VerdictLabel is the current label of a run's verdict or of a
// conversation's analysis: who said the judge was right or wrong, when,
// and what they overturned.
type VerdictLabel struct {
	Kind           string // LabelOfRun or LabelOfConversation
	InvocationID   string // a run's
	RunID          string // a run's
	ConversationID string // a conversation's
	LabelID        string
	TestName       string
	JudgeModel     string
	JudgedResult   string
	VerdictCorrect bool
	// CorrectedResult is the result the reviewer says is right when they
	// overturned the verdict.
	CorrectedResult string
	// Criteria are the criteria the reviewer labelled.
	Criteria     []CriterionLabel
	Note         string
	Reviewer     Reviewer
	LabelledAtMs int64
}

// CriterionLabel is one criterion of a label.
type CriterionLabel struct {
	ID, Text, JudgedResult string
	Correct                bool
}

// Reviewer is who labelled.
type Reviewer struct {
	UserID, Email, Name string
}

// LabelKey names a run (InvocationID and RunID) or a conversation.
type LabelKey struct {
	Kind, InvocationID, RunID, ConversationID string
}

// Verdicts reads the projections of the testing service's analyses and
// labels.
type Verdicts interface {
	// Analysis is the conversation's latest analysis, nil when it has
	// none.
	Analysis(ctx context.Context, workspaceID, conversationID string) (*Analysis, error)
	// Labels are the current labels of what keys name, in keys' order;
	// what has no label is left out.
	Labels(ctx context.Context, workspaceID string, keys []LabelKey) ([]VerdictLabel, error)
}

// maxTicketLabels bounds the labels a ticket shows: its runs (10
// invocations of at most 100 runs) and its conversations.
const maxTicketLabels = 2000

// TicketLabels are the current labels of a ticket's failed runs and of
// its conversations (none when the service has no Verdicts).
func (a *App) TicketLabels(ctx context.Context, t *ticketsv1.Ticket) ([]VerdictLabel, error) {
	if a.Verdicts == nil {
		return nil, nil
	}
	var keys []LabelKey
	for _, inv := range t.GetTestFailures().GetInvocations() {
		for _, run := range inv.GetRunIds() {
			keys = append(keys, LabelKey{Kind: LabelOfRun, InvocationID: inv.GetInvocationId(), RunID: run})
		}
	}
	for _, c := range t.GetConversationIds() {
		keys = append(keys, LabelKey{Kind: LabelOfConversation, ConversationID: c})
	}
	if len(keys) > maxTicketLabels {
		keys = keys[len(keys)-maxTicketLabels:] // the newest
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return a.Verdicts.Labels(ctx, t.GetWorkspaceId(), keys)
}
