package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// QAActor is the user id on what the QA worker changes: ticket owner,
// status changes, comments.
const QAActor = "qa-worker"

// TestFailureLabel marks the tickets the QA worker keeps for failing tests.
const TestFailureLabel = "test-failure"

// Bounds of what a ticket keeps of its test's failures.
const (
	maxFailedInvocations = 10
	maxRunIDs            = 100
	// maxEvictedInvocations bounds the invocations a ticket remembers
	// past the shown ones, to know their redelivered runs: a redelivery
	// comes within minutes, not after 32 more invocations failed the test.
	maxEvictedInvocations = 32
	maxGenerations        = 16 // deleted tickets of one test before giving up
)

// RunFailure is one failed run of a test.
type RunFailure struct {
	InvocationID, RunID string
	Rationale           string
	At                  time.Time
}

// FailingTest is a batch of failed runs of one test of an agent.
type FailingTest struct {
	WorkspaceID, AgentID, TestID, TestName string
	Failures                               []RunFailure
}

// RecordTestFailures keeps one ticket per agent and failing test: the
// first failure opens it (TicketCreated, source qa, needs_clustering),
// later ones are recorded on it (TestFailureRecorded: runs and
// invocations linked, a comment per new invocation) and a failure after
// it was resolved reopens it. A ticket merged into another passes the
// news on to its target. Recording a run twice changes nothing, so
// redelivery is harmless.
//
// The ticket's id is derived from (agent, test): concurrent workers meet
// on one subject and optimistic concurrency orders them. A deleted ticket
// makes way for the next generation of the id.
func (a *App) RecordTestFailures(ctx context.Context, f FailingTest) (*ticketsv1.Ticket, error) {
	if len(f.Failures) == 0 {
		return nil, nil
	}
	for gen := 0; gen < maxGenerations; gen++ {
		id := qaTicketID(f, gen)
		for range 2 { // once more if a concurrent worker created it first
			t, err := a.recordOnExisting(ctx, f, id)
			if !errors.Is(err, a.Tickets.NotFound) {
				return t, err
			}
			t, err = a.createForTest(ctx, f, id)
			if !errors.Is(err, eventlog.ErrConflict) {
				return t, err
			}
			if _, _, err := a.Get(ctx, f.WorkspaceID, id); err != nil {
				break // the subject holds a deleted ticket: next generation
			}
		}
	}
	return nil, fmt.Errorf("test %s of agent %s: %d generations of its ticket deleted", f.TestID, f.AgentID, maxGenerations)
}

func qaTicketID(f FailingTest, gen int) string {
	return "tkt_" + esproto.StableID(f.WorkspaceID, fmt.Sprintf("qa-test/%s/%s/%d", f.AgentID, f.TestID, gen))
}

// errMergedInto carries the target of a merged ticket.
type errMergedInto struct{ target string }

func (e errMergedInto) Error() string { return "merged into " + e.target }

func (a *App) recordOnExisting(ctx context.Context, f FailingTest, id string) (*ticketsv1.Ticket, error) {
	for hops := 0; ; hops++ {
		own := hops == 0
		t, err := a.change(ctx, f.WorkspaceID, id, "", func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
			if t.Status == domain.StatusMerged && hops < 5 {
				return nil, errMergedInto{t.GetMergedIntoTicketId()}
			}
			return a.applyFailures(t, f, own, meta)
		})
		var merged errMergedInto
		if !errors.As(err, &merged) {
			return t, err
		}
		id = merged.target
	}
}

func (a *App) createForTest(ctx context.Context, f FailingTest, id string) (*ticketsv1.Ticket, error) {
	now := a.openedAt()
	first := f.Failures[0]
	comment := fmt.Sprintf("Test %q fails: %s", f.TestName, orDefault(first.Rationale, "the judge gave no rationale"))
	t := &ticketsv1.Ticket{
		TicketId: id, WorkspaceId: f.WorkspaceID, AgentId: f.AgentID, OwnerUserId: QAActor,
		Title: domain.DeriveTitle(fmt.Sprintf("Test %q fails", f.TestName)), Status: domain.StatusOpen, Source: domain.SourceQA,
		NeedsClustering: true, ConversationIds: []string{}, Labels: []string{TestFailureLabel}, QaComment: proto.String(clip(comment)),
		CreatedAtUnixSecs: now.Unix(), UpdatedAtUnixSecs: now.Unix(), CreatedAtUnixMs: now.UnixMilli(),
		StatusChanges: []*ticketsv1.StatusChange{{Status: domain.StatusOpen, ChangedByUserId: proto.String(QAActor), ChangedAtUnixSecs: now.Unix()}},
	}
	meta := esproto.Meta(ctx, f.WorkspaceID, "", now)
	if _, err := a.applyFailures(t, f, true, meta); err != nil {
		return nil, err
	}
	// Opened as every ticket is, whoever opens it: subscribers of
	// ticket_created hear of it, its first runs in its test_failures.
	t, _, err := a.Tickets.Create(ctx, f.WorkspaceID, id, meta, &ticketsv1.TicketCreated{Meta: meta, Ticket: t}, t)
	return t, err
}

// applyFailures records f's new runs on t; nil when every run is already
// there. own says t is the test's ticket (not a merge target).
func (a *App) applyFailures(t *ticketsv1.Ticket, f FailingTest, own bool, meta *commonv1.EventMeta) (proto.Message, error) {
	tf := t.TestFailures
	if tf == nil || !own {
		tf = &ticketsv1.TestFailures{TestId: f.TestID, TestName: f.TestName}
	}
	ev := &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: t}
	now := a.Now().Unix()
	for _, r := range f.Failures {
		inv := findInvocation(tf, r.InvocationID)
		if inv != nil && slices.Contains(inv.RunIds, r.RunID) {
			continue // already recorded: a redelivery
		}
		if inv == nil && slices.Contains(tf.EvictedInvocationIds, r.InvocationID) {
			// Its runs were counted before newer invocations pushed it
			// out: a redelivered batch would count them again (and
			// reopen a ticket resolved since).
			continue
		}
		if inv == nil {
			inv = &ticketsv1.FailedInvocation{InvocationId: r.InvocationID}
			tf.Invocations = append(tf.Invocations, inv)
			if n := len(tf.Invocations); n > maxFailedInvocations {
				for _, old := range tf.Invocations[:n-maxFailedInvocations] {
					tf.EvictedInvocationIds = append(tf.EvictedInvocationIds, old.InvocationId)
				}
				tf.Invocations = tf.Invocations[n-maxFailedInvocations:]
				if n := len(tf.EvictedInvocationIds); n > maxEvictedInvocations {
					tf.EvictedInvocationIds = tf.EvictedInvocationIds[n-maxEvictedInvocations:]
				}
			}
			ev.InvocationIds = append(ev.InvocationIds, r.InvocationID)
			t.TicketComments = append(t.TicketComments, &ticketsv1.Comment{
				Comment:           clip(fmt.Sprintf("Test %q (%s) failed in invocation %s, run %s: %s", f.TestName, f.TestID, r.InvocationID, r.RunID, orDefault(r.Rationale, "no rationale"))),
				CreatedAtUnixSecs: now, OwnerUserId: proto.String(QAActor),
			})
		}
		if len(inv.RunIds) < maxRunIDs {
			inv.RunIds = append(inv.RunIds, r.RunID)
		}
		inv.FailedRuns++
		tf.FailedRuns++
		inv.LastFailedAtUnixSecs = max(inv.LastFailedAtUnixSecs, r.At.Unix())
		ev.RunIds = append(ev.RunIds, r.RunID)
		widenSeen(t, proto.Int64(r.At.Unix()), proto.Int64(r.At.Unix()))
	}
	if len(ev.RunIds) == 0 {
		return nil, nil
	}
	if own {
		t.TestFailures = tf
	}
	if t.Status == domain.StatusResolved {
		t.Status, ev.Reopened = domain.StatusOpen, true
		t.StatusChanges = append(t.StatusChanges, &ticketsv1.StatusChange{Status: domain.StatusOpen, ChangedByUserId: proto.String(QAActor), ChangedAtUnixSecs: now})
		t.TicketComments = append(t.TicketComments, &ticketsv1.Comment{Comment: "Reopened: the test failed again after the ticket was resolved.", CreatedAtUnixSecs: now, OwnerUserId: proto.String(QAActor)})
	}
	ev.Public = publicOf(domain.FailuresRecorded(ev.Reopened, len(ev.InvocationIds) > 0))
	return ev, nil
}

func findInvocation(tf *ticketsv1.TestFailures, id string) *ticketsv1.FailedInvocation {
	for _, inv := range tf.Invocations {
		if inv.InvocationId == id {
			return inv
		}
	}
	return nil
}

// ConversationReport is what the QA worker raises from a platform event
// about a conversation (an escalation, a conversation that went badly).
type ConversationReport struct {
	WorkspaceID, AgentID, ConversationID string
	Source                               string // domain.SourceAgent (the agent escalated) or domain.SourceQA
	Comment                              string
	At                                   time.Time
	// EventID makes the report idempotent: the same event raises or joins
	// a ticket once, however often it is delivered.
	EventID string
}

// RaiseFromConversation raises a ticket on the conversation, or joins the
// conversation's active ticket, exactly as the public create does.
func (a *App) RaiseFromConversation(ctx context.Context, r ConversationReport) (*ticketsv1.Ticket, error) {
	caller := principal.Principal{WorkspaceID: r.WorkspaceID, UserID: QAActor}
	seen := r.At.Unix()
	t, _, err := a.Create(ctx, principal.Caller{Principal: caller, CommandID: "qa-worker/" + r.EventID}, CreateInput{
		ConversationID: &r.ConversationID, AgentID: &r.AgentID, Source: &r.Source,
		QAComment: proto.String(clip(r.Comment)), FirstSeenUnixSecs: &seen, LastSeenUnixSecs: &seen,
	})
	return t, err
}

func clip(s string) string {
	if len(s) <= domain.MaxComment {
		return s
	}
	return strings.ToValidUTF8(s[:domain.MaxComment-3], "") + "..."
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
