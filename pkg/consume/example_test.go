package consume_test

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/consume"
)

// A job queue worked message by message: eight jobs at once, each
// settled by what its handler returns. The handler never acks or naks by
// hand, and reads the message without naming JetStream.
func ExampleMessages() {
	var js jetstream.JetStream // the process's JetStream
	run := func(ctx context.Context, data []byte, heartbeat func() error) error { return nil }
	errBadJob := errors.New("not a job")
	const maxAttempts = 5

	ctx, stop := context.WithCancel(context.Background())
	defer stop() // ending ctx stops the worker: jobs not handled are given back, none acknowledged
	_ = consume.Messages(ctx, js, consume.Spec{
		Stream: "JOBS", Durable: "jobs-worker", FilterSubjects: []string{"jobs.>"},
		AckWait: time.Minute, Workers: 8,
		MaxAckPending: 10_000, // jobs waiting for a retry count: keep room for them
	}, func(ctx context.Context, m consume.Msg) consume.Outcome {
		if m.Delivered > maxAttempts {
			return consume.GiveUp() // dropped for good
		}
		// A job that outlives the replica's stopping finishes: detach from
		// ctx, bound it yourself, and keep the job yours while it runs.
		jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
		defer cancel()
		err := run(jctx, m.Data, m.InProgress)
		switch {
		case errors.Is(err, errBadJob):
			slog.Error("undecodable job dropped", "subject", m.Subject, "seq", m.Seq)
			return consume.GiveUp()
		case err != nil:
			return consume.RetryWithBackoff() // 500 ms doubling, at most 30 s
		}
		return consume.Done()
	})
}
