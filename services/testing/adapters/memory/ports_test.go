package memory

import (
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/counterstest"
	"github.com/voiceai-platform/voiceai/services/testing/app/feedtest"
	"github.com/voiceai-platform/voiceai/services/testing/app/jobqueuetest"
	"github.com/voiceai-platform/voiceai/services/testing/app/readmodeltest"
	"github.com/voiceai-platform/voiceai/services/testing/app/runnerportstest"
	"github.com/voiceai-platform/voiceai/services/testing/app/runslogtest"
)

// The memory adapters pass the suites the JetStream and store adapters
// pass (in package adapters).

func TestIndexConforms(t *testing.T) {
	readmodeltest.Run(t, 1, func(*testing.T) app.ReadModel { return NewIndex() })
}

func TestRunsLogConforms(t *testing.T) {
	runslogtest.Run(t, func(*testing.T) app.RunsLog { return NewRunsLog(time.Now) })
}

func TestJobQueueConforms(t *testing.T) {
	jobqueuetest.Run(t, func(*testing.T) (app.JobQueue, func(string) int) {
		q := NewJobQueue()
		return q, func(filter string) int {
			n := 0
			for _, j := range q.Snapshot() {
				if events.SubjectMatches(filter, j.Subject) {
					n++
				}
			}
			return n
		}
	})
}

func TestCountersConforms(t *testing.T) {
	counterstest.Run(t, func(*testing.T) (app.Counters, func(string, int64)) {
		c := NewCounters()
		return c, c.Add
	})
}

func TestRunnerPortsConform(t *testing.T) {
	runnerportstest.Run(t, func(*testing.T) runnerportstest.Ports {
		p := NewPorts(time.Now)
		return runnerportstest.Ports{Runner: p.RunnerPorts(), Jobs: p.Jobs, Runs: p.Runs, Counts: p.Counts}
	})
}

func TestInvocationFeedConforms(t *testing.T) {
	feedtest.Run(t, func(*testing.T) (app.InvocationFeed, func(string, []byte)) {
		f := NewFeed()
		return f, func(subject string, data []byte) { f.Append(app.Record{Subject: subject, Data: data}) }
	})
}
