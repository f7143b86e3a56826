package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
)

// A load test's job plays its test's agent turn for many callers at
// once: each caller a goroutine waiting on the endpoint (not a runner
// slot), turnsPerCaller turns one after another. What it measures is
// the platform's figures app turns into the step's (see app.CheckLoadStep).

// LoadJob is one job of a load test's step.
type LoadJob struct {
	Run            Run // the test's run as a single run would play it (no judge)
	Step, Job      int
	Callers        int
	TurnsPerCaller int
	// Limit is the endpoint concurrency this job may use: its callers,
	// bounded by the operator's maximum (it bypasses the endpoint's usual
	// limit, for this load test's calls only), shared by the calls of
	// every job with the same LimitScope on this runner (a step's).
	Limit      int
	LimitScope string
}

// maxLoadReasons bounds the distinct failure reasons one job reports; the
// rest are counted under otherLoadReason.
const maxLoadReasons = 20

const otherLoadReason = "other failures (more distinct reasons than are listed)"

// Load plays a load test's job and answers its samples.
func (e *Executor) Load(ctx context.Context, j LoadJob) *testingv1.LoadSamples {
	inv := j.Run.Invocation
	out := &testingv1.LoadSamples{WorkspaceId: inv.GetWorkspaceId(), InvocationId: inv.GetInvocationId(),
		Step: int32(j.Step), Job: int32(j.Job), Callers: int32(j.Callers), WorkerId: j.Run.WorkerID}
	turns := max(j.TurnsPerCaller, 1)
	failures := map[string]int64{}
	fail := func(reason string, n int64) {
		if _, ok := failures[reason]; !ok && len(failures) >= maxLoadReasons {
			reason = otherLoadReason
		}
		failures[reason] += n
	}
	defer func() {
		reasons := make([]string, 0, len(failures))
		for r := range failures {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			out.Failures = append(out.Failures, &testingv1.LoadFailure{Reason: r, Count: failures[r]})
		}
	}()

	limit := e.TimeLimit
	if limit <= 0 {
		limit = 2 * time.Minute
	}
	conv, _ := e.conversation(j.Run)
	n := j.Limit
	if n <= 0 {
		n = j.Callers
	}
	// The job keeps its worker slot while its callers wait: a caller is a
	// goroutine, not a run, and gives nothing back.
	mctx := withEndpointLimit(context.WithValue(ctx, slotKey{}, nil), j.LimitScope, n)
	var agent AgentModel = e.Model
	if e.Agents != nil {
		var err error
		if agent, err = e.Agents.For(mctx, inv.GetWorkspaceId(), e.agentConfig(j.Run.AgentConfig), e.variables(j.Run)); err != nil {
			fail(err.Error(), int64(j.Callers*turns))
			return out
		}
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{}) // the callers call at once
	for range j.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range turns {
				first, turn, over, err := loadTurn(mctx, agent, conv, limit)
				mu.Lock()
				if err != nil {
					fail(loadReason(err, limit), 1)
				} else {
					out.FirstTokenUs = append(out.FirstTokenUs, first.Microseconds())
					out.TurnUs = append(out.TurnUs, turn.Microseconds())
					out.OverheadUs = append(out.OverheadUs, over.Microseconds())
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// loadTurn plays one agent turn: its first token and whole time as a
// caller waits for them, and the platform's own time in it (the turn
// less the time the endpoint's requests were on the wire).
func loadTurn(ctx context.Context, agent AgentModel, conv Conversation, limit time.Duration) (first, turn, overhead time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var firstAt time.Time
	var waited time.Duration
	clock := &endpointClock{}
	tctx := context.WithValue(context.WithValue(context.WithValue(ctx, firstTokenKey{}, &firstAt), waitedKey{}, &waited), endpointClockKey{}, clock)
	begin := time.Now()
	_, _, err = agent.Respond(tctx, conv)
	turn = time.Since(begin) - waited
	if err != nil {
		return 0, 0, 0, err
	}
	first = turn
	if !firstAt.IsZero() {
		first = min(max(firstAt.Sub(begin)-waited, 0), turn)
	}
	if on, ok := clock.total(); ok {
		overhead = max(turn-on, 0)
	}
	return first, turn, overhead, nil
}

// loadReason is how a failed turn is counted.
func loadReason(err error, limit time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("The turn exceeded its time limit of %s.", limit)
	}
	if IsEndpointError(err) {
		return err.Error()
	}
	return "The model failed: " + err.Error()
}

// endpointLimitKey holds, in a load test's context, the endpoint
// concurrency its calls use instead of the endpoint's usual limit.
type endpointLimitKey struct{}

type endpointLimit struct {
	scope string // the load test: its calls share one limit per runner
	n     int
}

func withEndpointLimit(ctx context.Context, scope string, n int) context.Context {
	return context.WithValue(ctx, endpointLimitKey{}, endpointLimit{scope: scope, n: n})
}

func endpointLimitOf(ctx context.Context) (endpointLimit, bool) {
	l, ok := ctx.Value(endpointLimitKey{}).(endpointLimit)
	return l, ok && l.n > 0
}

// endpointClock adds up the time a turn's requests to the endpoint were
// on the wire: from sending each to the end of its answer's body.
type endpointClockKey struct{}

type endpointClock struct {
	mu  sync.Mutex
	sum time.Duration
	n   int
}

func (c *endpointClock) add(d time.Duration) {
	c.mu.Lock()
	c.sum += d
	c.n++
	c.mu.Unlock()
}

func (c *endpointClock) total() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum, c.n > 0
}

// timedTransport times the requests of a turn that carries an
// endpointClock.
type timedTransport struct{ base http.RoundTripper }

func (t timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	clock, ok := r.Context().Value(endpointClockKey{}).(*endpointClock)
	if !ok {
		return t.base.RoundTrip(r)
	}
	begin := time.Now()
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		clock.add(time.Since(begin))
		return resp, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, done: func() { clock.add(time.Since(begin)) }}
	return resp, nil
}

// timedBody calls done once: when its end is read, or it is closed.
type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}
