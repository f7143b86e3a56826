package qaworker

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// conditionFailure is the condition result of a run that failed its test.
const conditionFailure = "failure"

// handleRuns records a batch's failed runs, one ticket write per agent and
// test, several tests at once.
func (w *Worker) handleRuns(ctx context.Context, batch []app.QAMessage) error {
	groups := map[[3]string]*app.FailingTest{}
	traces := map[[3]string]string{} // a group's first run's traceparent
	var order [][3]string
	for _, m := range batch {
		if !app.DecodesRun(m.RunStatus) {
			w.handled.WithLabelValues("runs", "skipped").Inc()
			continue
		}
		if m.Err != nil {
			w.skip("runs", "undecodable run event", m, m.Err)
			continue
		}
		done, ok := m.Event.(*testingv1.RunCompleted)
		r := done.GetRun()
		if !ok || !ticketed(r) {
			w.handled.WithLabelValues("runs", "skipped").Inc()
			continue
		}
		inv, err := w.invs.get(ctx, r.WorkspaceId, r.InvocationId)
		if err != nil {
			return err
		}
		if inv == nil {
			w.skip("runs", "run of an unknown invocation", m, nil)
			continue
		}
		key := [3]string{r.WorkspaceId, inv.AgentId, r.TestId}
		g := groups[key]
		if g == nil {
			g = &app.FailingTest{WorkspaceID: r.WorkspaceId, AgentID: inv.AgentId, TestID: r.TestId, TestName: testName(inv, r)}
			groups[key] = g
			traces[key] = m.Traceparent
			order = append(order, key)
		}
		g.Failures = append(g.Failures, app.RunFailure{
			InvocationID: r.InvocationId, RunID: r.RunId, Rationale: rationale(r), At: time.UnixMilli(r.FinishedAtUnixMs),
		})
	}
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(w.Parallel)
	for _, key := range order {
		g, tp := groups[key], traces[key]
		eg.Go(func() error {
			return inTrace(ctx, tp, "qa ticket from failed runs", func(ctx context.Context) error {
				_, err := w.App.RecordTestFailures(ctx, *g)
				if permanent(err) {
					w.Log.WarnContext(ctx, "qa worker: failed runs not ticketed", "agent_id", g.AgentID, "test_id", g.TestID, "err", err)
					return nil
				}
				if err == nil {
					w.handled.WithLabelValues("runs", "ticketed").Add(float64(len(g.Failures)))
				}
				return err
			})
		})
	}
	return eg.Wait()
}

// skip counts m skipped and logs why, in the trace m names.
func (w *Worker) skip(source, why string, m app.QAMessage, err error) {
	w.handled.WithLabelValues(source, "skipped").Inc()
	w.Log.WarnContext(tracing.Extract(context.Background(), m.Traceparent), "qa worker: "+why, "subject", m.Subject, "err", err)
}

// inTrace does what the worker does about a message (or a group of them)
// as a consumer span of the trace that asked (traceparent), so the lines
// it logs and the ticket events it appends continue that trace: a ticket
// the worker raises is one trace with the event that caused it, on to
// its webhook deliveries.
func inTrace(ctx context.Context, traceparent, name string, do func(context.Context) error) error {
	ctx, span := tracing.Start(ctx, traceparent, name, trace.SpanKindConsumer)
	defer span.End()
	err := do(tracing.WithRequestTrace(ctx, tracing.Traceparent(ctx)))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

func testName(inv *testingv1.Invocation, r *testingv1.RunResult) string {
	if i := int(r.TestIndex); i >= 0 && i < len(inv.Tests) && inv.Tests[i].TestId == r.TestId {
		return inv.Tests[i].TestName
	}
	for _, t := range inv.Tests {
		if t.TestId == r.TestId {
			return t.TestName
		}
	}
	return r.TestId
}

// ticketed says whether a failed run is the agent's failure: its judge
// found the condition not met, or it went over its test's latency budget
// (whatever the judge said of the reply). A run that errored (no verdict:
// the time limit, a model or endpoint fault) says nothing about the agent.
func ticketed(r *testingv1.RunResult) bool {
	if r.GetStatus() != events.RunStatusFailed || r.GetError() != "" {
		return false
	}
	return r.GetConditionResult() == conditionFailure || len(r.GetLatencyBudgetBreaches()) > 0
}

func rationale(r *testingv1.RunResult) string {
	if r.RationaleSummary != "" {
		return r.RationaleSummary
	}
	return strings.Join(r.RationaleMessages, " ")
}

// invocationCache holds the invocations runs belong to: an invocation's
// agent and planned tests never change, and a large one has many runs.
type invocationCache struct {
	store eventlog.Store
	mu    sync.Mutex
	byID  map[string]*testingv1.Invocation
}

// maxCachedInvocations bounds the cache; it is emptied when full.
const maxCachedInvocations = 10_000

func newInvocationCache(store eventlog.Store) *invocationCache {
	return &invocationCache{store: store, byID: map[string]*testingv1.Invocation{}}
}

// get reads the invocation from its last event on the testing log (nil:
// none).
func (c *invocationCache) get(ctx context.Context, ws, id string) (*testingv1.Invocation, error) {
	c.mu.Lock()
	inv, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return inv, nil
	}
	subject, err := events.TestingSubject(ws, events.TestingKindInvocation, id)
	if err != nil {
		return nil, nil
	}
	msg, _, found, err := esproto.Last(ctx, c.store, subject)
	if err != nil || !found {
		return nil, err
	}
	s, _ := msg.(interface{ GetInvocation() *testingv1.Invocation })
	if s == nil || s.GetInvocation() == nil {
		return nil, nil
	}
	inv = s.GetInvocation()
	c.mu.Lock()
	if len(c.byID) >= maxCachedInvocations {
		clear(c.byID)
	}
	c.byID[id] = inv
	c.mu.Unlock()
	return inv, nil
}
