package adapters_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/counterstest"
	"github.com/voiceai-platform/voiceai/services/testing/app/feedtest"
	"github.com/voiceai-platform/voiceai/services/testing/app/jobqueuetest"
	"github.com/voiceai-platform/voiceai/services/testing/app/runnerportstest"
	"github.com/voiceai-platform/voiceai/services/testing/app/runslogtest"
)

// jetStream is a fresh embedded server with the testing streams.
func jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	return testenv.StreamsAt(t, adapters.EnsureStreams)
}

func publish(t *testing.T, js jetstream.JetStream, msg *nats.Msg) {
	t.Helper()
	if _, err := js.PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
}

func TestRunsLogJetStream(t *testing.T) {
	runslogtest.Run(t, func(t *testing.T) app.RunsLog { return adapters.NewRunsLog(jetStream(t)) })
}

func TestJobQueueJetStream(t *testing.T) {
	jobqueuetest.Run(t, func(t *testing.T) (app.JobQueue, func(string) int) {
		js := jetStream(t)
		return adapters.NewJobQueue(js, nil), countJobs(t, js)
	})
}

// countJobs counts the jobs on TESTJOBS whose subject matches a filter.
func countJobs(t *testing.T, js jetstream.JetStream) func(filter string) int {
	return func(filter string) int {
		s, err := eventstore.StreamOf(context.Background(), js, events.TestJobsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range info.State.Subjects {
			n += int(c)
		}
		return n
	}
}

func TestCountersJetStream(t *testing.T) {
	counterstest.Run(t, func(t *testing.T) (app.Counters, func(string, int64)) {
		js := jetStream(t)
		return adapters.NewCounters(js), func(subject string, n int64) {
			msg := nats.NewMsg(subject)
			msg.Header.Set("Nats-Incr", strconv.FormatInt(n, 10)) // as runners add
			publish(t, js, msg)
		}
	})
}

func TestRunnerPortsJetStream(t *testing.T) {
	runnerportstest.Run(t, func(t *testing.T) runnerportstest.Ports {
		js := jetStream(t)
		return runnerportstest.Ports{Runner: adapters.NewRunnerPorts(js, time.Second, slog.New(slog.DiscardHandler)),
			Jobs: adapters.NewJobQueue(js, nil), Runs: adapters.NewRunsLog(js), Counts: adapters.NewCounters(js)}
	})
}

func TestInvocationFeedJetStream(t *testing.T) {
	feedtest.Run(t, func(t *testing.T) (app.InvocationFeed, func(string, []byte)) {
		js := jetStream(t)
		return adapters.NewInvocationFeed(js, slog.New(slog.DiscardHandler)), func(subject string, data []byte) {
			publish(t, js, &nats.Msg{Subject: subject, Data: data})
		}
	})
}
