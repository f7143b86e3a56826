// Package domain holds the triage-ticket rules: the status state machine,
// priorities, sources and issue types, and how merges and conversation
// re-reports change a ticket.
package domain

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Statuses. A ticket starts open; merged is reached only by merging and
// is final.
const (
	StatusOpen       = "open"
	StatusInProgress = "in_progress"
	StatusResolved   = "resolved"
	StatusMerged     = "merged"
)

// Statuses lists every status value: the spec's four, exactly.
var Statuses = []string{StatusOpen, StatusInProgress, StatusResolved, StatusMerged}

// transitions is the state machine of PATCH status changes:
//
//	open        → in_progress, resolved
//	in_progress → open, resolved
//	resolved    → open (reopen)
//	merged      → (none: final)
var transitions = map[string][]string{
	StatusOpen:       {StatusInProgress, StatusResolved},
	StatusInProgress: {StatusOpen, StatusResolved},
	StatusResolved:   {StatusOpen},
}

// CanTransition reports whether a PATCH may move a ticket from one status
// to another. Staying in the same status is a no-op, not a transition.
func CanTransition(from, to string) bool { return slices.Contains(transitions[from], to) }

// IsActive reports whether a ticket still collects reports: a new report
// on its conversation adds to it, and it may be merged.
func IsActive(status string) bool { return status == StatusOpen || status == StatusInProgress }

// ActiveStatuses are the statuses IsActive accepts.
var ActiveStatuses = []string{StatusOpen, StatusInProgress}

// CanAbsorb reports whether a ticket may be the target of a merge.
func CanAbsorb(status string) bool { return IsActive(status) || status == StatusResolved }

// Sources.
const (
	SourceQA     = "qa"
	SourceAgent  = "agent"
	SourceManual = "manual"
)

// Sources lists every source value.
var Sources = []string{SourceQA, SourceAgent, SourceManual}

// Priorities, least urgent first.
var Priorities = []string{"low", "medium", "high", "urgent"}

// PriorityRank orders priorities; no priority ranks lowest (0).
func PriorityRank(p string) int { return slices.Index(Priorities, p) + 1 }

// HigherPriority returns the more urgent of a and b.
func HigherPriority(a, b string) string {
	if PriorityRank(b) > PriorityRank(a) {
		return b
	}
	return a
}

// IssueTypes are the spec's issue types.
var IssueTypes = []string{
	"knowledge_gap", "incorrect_information", "documentation_gap", "product_feedback", "platform_bug",
	"tool_issue", "missing_tool", "unnecessary_escalation", "wrong_action",
}

// Limits on ticket text. Requests are held to them by the API's schemas
// (pkg/api/schemas.yaml), checked at the edge; a test keeps the two equal.
const (
	MaxTitle    = 300
	MaxComment  = 20_000
	MaxLabels   = 20
	MaxLabelLen = 64
	MaxTurn     = 100_000
	MaxMerge    = 100
)

// Blank tells whether text has nothing but separators and control
// characters: the text the API's schemas refuse where a comment is needed
// (api.NotBlankPattern).
func Blank(text string) bool {
	return !strings.ContainsFunc(text, func(r rune) bool { return !unicode.In(r, unicode.Z, unicode.Cc) })
}

// DeriveTitle makes a one-line headline from a comment, as the public API
// does when no title is given.
func DeriveTitle(text string) string {
	line := strings.TrimSpace(strings.SplitN(strings.TrimSpace(text), "\n", 2)[0])
	if utf8.RuneCountInString(line) <= 80 {
		return line
	}
	r := []rune(line)
	return strings.TrimSpace(string(r[:79])) + "…"
}
