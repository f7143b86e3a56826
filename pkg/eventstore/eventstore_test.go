package eventstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	js, err := jetstream.New(env.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStream(context.Background(), js, StreamConfig{Name: "TEST", Subjects: []string{"test.>"}}); err != nil {
		t.Fatal(err)
	}
	return New(js, "TEST")
}

func ev(data string) Event { return Event{Type: "test.happened", Workspace: "ws", Data: []byte(data)} }

func TestAppendAndLoadInOrder(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	a1, err := s.Append(ctx, "test.a", 0, "", ev("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "test.b", 0, "", ev("other")); err != nil {
		t.Fatal(err)
	}
	a2, err := s.Append(ctx, "test.a", a1.Seq, "", ev("2"))
	if err != nil {
		t.Fatal(err)
	}
	recs, last, err := s.Load(ctx, "test.a")
	if err != nil {
		t.Fatal(err)
	}
	if last != a2.Seq || len(recs) != 2 || string(recs[0].Data) != "1" || string(recs[1].Data) != "2" {
		t.Fatalf("history: last=%d %+v", last, recs)
	}
	if recs[0].Type != "test.happened" || recs[0].Workspace != "ws" || recs[0].EventID == "" {
		t.Fatalf("headers not kept: %+v", recs[0])
	}
	rec, found, err := s.Last(ctx, "test.a")
	if err != nil || !found || string(rec.Data) != "2" || rec.Seq != a2.Seq {
		t.Fatalf("last: %+v %v %v", rec, found, err)
	}
}

func TestEmptySubject(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	recs, last, err := s.Load(ctx, "test.none")
	if err != nil || recs != nil || last != 0 {
		t.Fatalf("empty load: %v %d %v", recs, last, err)
	}
	if _, found, err := s.Last(ctx, "test.none"); err != nil || found {
		t.Fatalf("empty last: %v %v", found, err)
	}
}

func TestConflicts(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	a, err := s.Append(ctx, "test.a", 0, "", ev("1"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, "test.a", 0, "", ev("create again"))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("create-only on an existing subject: %v", err)
	}
	if _, err := s.Append(ctx, "test.a", a.Seq, "", ev("2")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, "test.a", a.Seq, "", ev("stale"))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("stale expected sequence: %v", err)
	}
	// The conflict is recognised by the JetStream error code, never text.
	if !IsConflict(&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "anything"}) ||
		!IsConflict(&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant}) ||
		IsConflict(&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamNotFound, Description: "wrong last sequence"}) {
		t.Fatal("IsConflict must judge by error code only")
	}
}

func TestOneWinnerAmongConcurrentWriters(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	base, err := s.Append(ctx, "test.a", 0, "", ev("0"))
	if err != nil {
		t.Fatal(err)
	}
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Append(ctx, "test.a", base.Seq, "", ev(fmt.Sprint(i)))
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != 19 {
		t.Fatalf("wins=%d conflicts=%d, want 1 and 19", wins.Load(), conflicts.Load())
	}
}

func TestCommandIDDeduplicates(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	first, err := s.Append(ctx, "test.a", 0, "cmd-1", ev("1"))
	if err != nil || first.Duplicate {
		t.Fatalf("first: %+v %v", first, err)
	}
	// A retry of the same command carries the same, now stale, expected
	// sequence: it must be answered as a duplicate, not a conflict.
	again, err := s.Append(ctx, "test.a", 0, "cmd-1", ev("1"))
	if err != nil || !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("retry: %+v %v", again, err)
	}
	recs, _, err := s.Load(ctx, "test.a")
	if err != nil || len(recs) != 1 {
		t.Fatalf("history after retry: %d %v", len(recs), err)
	}
}

func TestRetryReloadsOnConflict(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	if _, err := s.Append(ctx, "test.a", 0, "", ev("0")); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	err := Retry(ctx, 5, func() error {
		attempts++
		rec, _, err := s.Last(ctx, "test.a")
		if err != nil {
			return err
		}
		if attempts == 1 { // someone else writes between our read and append
			if _, err := s.Append(ctx, "test.a", rec.Seq, "", ev("interloper")); err != nil {
				return err
			}
		}
		_, err = s.Append(ctx, "test.a", rec.Seq, "", ev("mine"))
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("retry: attempts=%d err=%v", attempts, err)
	}
}
