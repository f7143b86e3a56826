package adapters_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/jobqueuetest"
)

// The suite again with every invocation's queue there, as the enqueuer
// makes it before the first job: Waiting then counts the queue's jobs
// rather than reading the stream.
func TestJobQueueJetStreamWithQueues(t *testing.T) {
	jobqueuetest.Run(t, func(t *testing.T) (app.JobQueue, func(string) int) {
		js := jetStream(t)
		for _, inv := range []string{"tinv_a", "tinv_b"} {
			if err := adapters.EnsureRunQueue(context.Background(), js, "ws", inv); err != nil {
				t.Fatal(err)
			}
		}
		return adapters.NewJobQueue(js, nil), countJobs(t, js)
	})
}

// An invocation's jobs are waiting until acked: taken, given back for a
// retry, or taken and then purged (a cancel) they count as the stream
// holds them.
func TestAnInvocationsJobsWaitUntilAcked(t *testing.T) {
	js := jetStream(t)
	ctx := context.Background()
	if err := adapters.EnsureRunQueue(ctx, js, "ws", "tinv_a"); err != nil {
		t.Fatal(err)
	}
	q := adapters.NewJobQueue(js, nil)
	filter, _ := events.TestJobsOfInvocation("ws", "tinv_a")
	waiting := func(want bool, when string) {
		t.Helper()
		if got, err := q.Waiting(ctx, filter); err != nil || got != want {
			t.Fatalf("%s: waiting %v, %v; want %v", when, got, err, want)
		}
	}
	enqueue := func(ids ...string) {
		t.Helper()
		err := q.Enqueue(ctx, len(ids), func(i int) (app.Message, error) {
			s, err := events.TestJobSubject("ws", "tinv_a", ids[i])
			return app.Message{Subject: s, ID: "tinv_a/" + ids[i], Data: []byte(ids[i])}, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.Consumer(ctx, events.TestJobsStream, adapters.RunQueueName("ws", "tinv_a"))
	if err != nil {
		t.Fatal(err)
	}
	take := func(n int) []jetstream.Msg {
		t.Helper()
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var got []jetstream.Msg
		for m := range batch.Messages() {
			got = append(got, m)
		}
		if len(got) != n {
			t.Fatalf("took %d jobs; want %d", len(got), n)
		}
		return got
	}

	waiting(false, "no job queued")
	enqueue("run-1", "run-2")
	waiting(true, "queued")
	jobs := take(2)
	waiting(true, "both taken, none acked")
	if err := jobs[0].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	if err := jobs[1].NakWithDelay(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waiting(true, "one acked, one given back for a retry")
	if err := take(1)[0].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	waiting(false, "both acked")

	enqueue("run-3")
	take(1) // and never acked: the runner died, or the invocation is cancelled
	if err := q.Purge(ctx, filter); err != nil {
		t.Fatal(err)
	}
	waiting(false, "a taken job purged")
}

// A queue that has passed a job still stored (as one can across a fault
// of the cluster: a consumer leader lost between a delivery and its
// replication) never delivers it again: runners make the queue anew once
// two listings in a row found jobs its count leaves out, and the job is
// taken. Here the queue passes the job by its delivery limit.
func TestARunQueueThatPassedAStoredJobIsMadeAnew(t *testing.T) {
	js := jetStream(t)
	ctx := context.Background()
	q := adapters.NewJobQueue(js, nil)
	err := q.Enqueue(ctx, 1, func(int) (app.Message, error) {
		s, err := events.TestJobSubject("ws", "tinv_a", "run_1")
		return app.Message{Subject: s, ID: "tinv_a/run_1", Data: []byte("run_1")}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, events.TestJobsStream)
	if err != nil {
		t.Fatal(err)
	}
	job := stream.CachedInfo().State.LastSeq
	name := adapters.RunQueueName("ws", "tinv_a")
	filter, _ := events.TestJobQueueFilter("ws", "tinv_a")
	if err := js.DeleteConsumer(ctx, events.TestJobsStream, name); err != nil {
		t.Fatal(err)
	}
	// Delivered once and never again: the queue passes the job, which
	// stays stored, once its ack wait ends.
	cons, err := js.CreateConsumer(ctx, events.TestJobsStream, jetstream.ConsumerConfig{Durable: name, FilterSubject: filter,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 50 * time.Millisecond, MaxDeliver: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cons.FetchNoWait(1); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the queue passed the job", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0 && info.Delivered.Stream == job
	})
	queues := adapters.NewRunQueues(js, 30*time.Second, slog.New(slog.DiscardHandler))
	none := func(string, string) int { return 0 }
	for range 3 { // two listings find the job unaccounted for; the third lists the queue made anew
		if err := queues.Refresh(ctx, none); err != nil {
			t.Fatal(err)
		}
	}
	listed := queues.Queues()
	if len(listed) != 1 || listed[0].Invocation != "tinv_a" {
		t.Fatalf("queues listed %+v, want tinv_a's", listed)
	}
	jobs, err := queues.Take(ctx, listed[0], 10)
	if err != nil || len(jobs) != 1 || string(jobs[0].Data()) != "run_1" {
		t.Fatalf("took %d jobs, %v; want run_1", len(jobs), err)
	}
}
