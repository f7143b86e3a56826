package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// JobsDedupWindow is how long the job queue and the counters remember a
// message id: a job re-queued, or a counter re-incremented, within it is
// dropped. It bounds how late a crashed runner's redelivery may come
// without double counting.
const JobsDedupWindow = events.TestRunsDedupWindow

// EnqueuerConsumer queues the runs of new and resubmitted invocations.
const EnqueuerConsumer = "testing-enqueuer"

// EnsureStreams creates the testing streams: TESTING and TESTRUNS (event
// stores), TESTJOBS (the runners' work queue) and TESTCOUNTS (counters).
func EnsureStreams(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if err := eventstore.EnsureEventStreams(ctx, js, replicas, events.TestingStream, events.TestRunsStream); err != nil {
		return err
	}
	if _, err := eventstore.EnsureConfig(ctx, js, testJobsConfig(replicas)); err != nil {
		return fmt.Errorf("stream %s: %w", events.TestJobsStream, err)
	}
	if _, err := eventstore.EnsureConfig(ctx, js, jetstream.StreamConfig{
		Name: events.TestCountsStream, Subjects: []string{events.TestCountsAll}, AllowMsgCounter: true,
		Storage: jetstream.FileStorage, Replicas: replicas, Duplicates: JobsDedupWindow, MaxMsgsPerSubject: 1, AllowDirect: true,
		Description: "Per-invocation run counters (done, passed)",
	}); err != nil {
		return fmt.Errorf("stream %s: %w", events.TestCountsStream, err)
	}
	return nil
}

// testJobsConfig is TESTJOBS, the runners' work queue.
func testJobsConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: events.TestJobsStream, Subjects: []string{events.TestJobsAll}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Replicas: replicas, Duplicates: JobsDedupWindow, AllowDirect: true,
		Description: "Run jobs for testing-runner workers (work queue)",
	}
}

// keptTestJobs is TESTJOBS kept by its users: deleted, it is made again
// by the enqueuer or a runner that finds it gone (the jobs it held are
// lost with it), where before no invocation ran until a restart.
func keptTestJobs(js jetstream.JetStream, log *slog.Logger) *eventstore.KeptStream {
	return &eventstore.KeptStream{JS: js, Config: testJobsConfig(1), Sibling: events.TestingStream, Log: log}
}

// EnsureRunRetention makes TESTRUNS keep run results for retention (its
// MaxAge; 0 keeps them for ever). The testing service owns this setting
// and ensures it before its other streams: a stream it makes has it from
// the start, where setting it just after would be an update racing, in
// nats-server, with the consumers the tickets service creates on TESTRUNS
// as soon as it exists. Other processes ensure TESTRUNS without a MaxAge,
// which leaves it as found; a stream one of them made first is updated
// here once.
func EnsureRunRetention(ctx context.Context, js jetstream.JetStream, replicas int, retention time.Duration) error {
	s, err := eventstore.EnsureEventStream(ctx, js, replicas, events.TestRunsStream, retention)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxAge == retention {
		return nil
	}
	cfg.MaxAge = retention // for ever, where it was kept less
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("stream %s: retention %s: %w", events.TestRunsStream, retention, err)
	}
	return nil
}
