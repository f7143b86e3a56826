package eventstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
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
		if got := eventlog.IsUnavailable(Classify(c.err)); got != c.want {
			t.Errorf("Classify(%v) unavailable = %v; want %v", c.err, got, c.want)
		}
	}
}

// An append JetStream has no room left for under its storage limit
// (max_file_store) is apperr.StorageFull, a 503 storage_full at the edge,
// not an internal error, and not a "retry in a second" either.
func TestAppendBeyondTheStorageLimitIsStorageFull(t *testing.T) {
	js := testenv.JetStreamAt(t, testenv.StartNATSWith(t, embedded.NATSOptions{MaxStore: 1 << 20}).ClientURL())
	ctx := t.Context()
	if _, err := EnsureStream(ctx, js, StreamConfig{Name: "TEST", Subjects: []string{"test.>"}}); err != nil {
		t.Fatal(err)
	}
	s, data := New(js, "TEST"), make([]byte, 64<<10)
	var err error
	for i := 0; ; i++ {
		_, err = s.Append(ctx, fmt.Sprintf("test.%d", i), AnySeq, "", Event{Type: "test.happened", Workspace: "ws", Data: data})
		if err != nil {
			break
		}
		if i == 64 {
			t.Fatal("4 MiB appended under a 1 MiB limit")
		}
	}
	if !errors.Is(err, apperr.StorageFull) || eventlog.IsUnavailable(err) {
		t.Fatalf("append beyond the limit: %v (unavailable %v); want storage full", err, eventlog.IsUnavailable(err))
	}
}

// A read nobody answers (a stream between leaders: here, its direct gets
// no longer served) is marked unavailable wherever it is read from, the
// counters of the testing service's quotas included: 503, not 500.
func TestGetMsgNobodyAnswersIsUnavailable(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	if _, err := s.Append(ctx, "test.a", 0, "", ev("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := GetMsg(ctx, s.js, "TEST", MsgRequest{LastFor: "test.a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.js.DeleteStream(ctx, "TEST"); err != nil {
		t.Fatal(err)
	}
	_, err := GetMsg(ctx, s.js, "TEST", MsgRequest{LastFor: "test.a"})
	if err == nil || !eventlog.IsUnavailable(err) {
		t.Fatalf("a read nobody answers: %v (unavailable %v)", err, eventlog.IsUnavailable(err))
	}
}
