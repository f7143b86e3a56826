package eventstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// An append no stream answers (here: no stream holds the subject; in a
// cluster: a stream between leaders) is marked unavailable, so the edge
// answers 503 with Retry-After instead of 500.
func TestAppendNobodyAnswersIsUnavailable(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	_, err := New(s.js, "TEST").Append(ctx, "elsewhere.a", AnySeq, "", ev("1"))
	if err == nil || !eventlog.IsUnavailable(err) || !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("append with no stream: %v (unavailable %v)", err, eventlog.IsUnavailable(err))
	}
	// A conflict is an answer, not an outage.
	if _, err := s.Append(ctx, "test.a", 0, "", ev("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "test.a", 0, "", ev("2")); !IsConflict(err) || eventlog.IsUnavailable(err) {
		t.Fatalf("conflict: %v", err)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", jetstream.ErrNoStreamResponse), true},
		{context.DeadlineExceeded, true},
		{&jetstream.APIError{ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{ErrorCode: 10163}, true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamNotFound}, false},
		{errors.New("boom"), false},
	} {
		if got := eventlog.IsUnavailable(classify(c.err)); got != c.want {
			t.Errorf("classify(%v) unavailable = %v; want %v", c.err, got, c.want)
		}
	}
}
