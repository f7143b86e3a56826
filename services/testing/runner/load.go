package runner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	"github.com/voiceai-platform/voiceai/services/testing/model"
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
	// Next, when set, is asked before a caller's next turn: false (the
	// load test was cancelled, the runner is stopping) starts no more
	// turns; the turns in flight finish and are measured. The turns not
	// played are counted as failed under unplayed, when it says why (a
	// stopping runner's: the step goes on without them), and not at all
	// when it is "" (a cancel's: the step is stopped).
	Next func() (goOn bool, unplayed string)
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

	limit := e.timeLimit()
	conv, _ := e.conversation(j.Run)
	n := j.Limit
	if n <= 0 {
		n = j.Callers
	}
	// The job keeps its worker slot while its callers wait: a caller is a
	// goroutine, not a run, and gives nothing back.
	mctx := model.WithEndpointLimit(model.WithoutSlot(ctx), model.EndpointLimit{Scope: j.LimitScope, N: n})
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
			for i := range turns {
				if i > 0 && j.Next != nil {
					if goOn, unplayed := j.Next(); !goOn {
						if unplayed != "" {
							mu.Lock()
							fail(unplayed, int64(turns-i))
							mu.Unlock()
						}
						return
					}
				}
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
	out.StartedAtUnixMs = time.Now().UnixMilli() // the callers' span: their step's peak counts it (domain.PeakCallers)
	close(start)
	wg.Wait()
	out.FinishedAtUnixMs = time.Now().UnixMilli()
	return out
}

// loadTurn plays one agent turn: its first token and whole time as a
// caller waits for them, and the platform's own time in it (the turn
// less the time the endpoint's requests were on the wire).
func loadTurn(ctx context.Context, agent AgentModel, conv Conversation, limit time.Duration) (first, turn, overhead time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tctx, clock := model.WithTurnClock(ctx)
	tctx, wire := model.WithWireClock(tctx)
	begin := time.Now()
	said, _, err := agent.Respond(tctx, conv)
	turn = time.Since(begin) - clock.Waited
	if err == nil && said.Empty() {
		err = errAnsweredNothing // a dead agent is no fast one
	}
	if err != nil {
		return 0, 0, 0, err
	}
	first = turn
	if !clock.FirstToken.IsZero() {
		first = min(max(clock.FirstToken.Sub(begin)-clock.Waited, 0), turn)
	}
	if on, ok := wire.Total(); ok {
		overhead = max(turn-on, 0)
	}
	return first, turn, overhead, nil
}

// errAnsweredNothing is a turn the endpoint answered without a word or a
// call: a failed turn of a load test, whatever its speed.
var errAnsweredNothing = errors.New("agent endpoint answered nothing: no text and no tool call")

// loadReason is how a failed turn is counted.
func loadReason(err error, limit time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("The turn exceeded its time limit of %s.", limit)
	}
	if IsEndpointError(err) || errors.Is(err, errAnsweredNothing) {
		return err.Error()
	}
	return "The model failed: " + err.Error()
}

// sharedCheck answers ask's last answer, asking again at most once per
// every: the callers of a load job ask before each turn, and share one
// read of the invocation rather than each making its own.
type sharedCheck struct {
	ask   func() bool
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	at   time.Time
	last bool
}

func (c *sharedCheck) Wanted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); c.at.IsZero() || now.Sub(c.at) >= c.every {
		c.last, c.at = c.ask(), now
	}
	return c.last
}
