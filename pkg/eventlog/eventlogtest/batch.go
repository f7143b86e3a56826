package eventlogtest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

func write(subject string, expected uint64, commandID, data string) eventlog.Write {
	return eventlog.Write{Subject: subject, ExpectedSeq: expected, CommandID: commandID, Event: ev(data)}
}

// subjectLen is how many events subject holds.
func subjectLen(t *testing.T, s eventlog.Store, subject string) int {
	t.Helper()
	recs, _, err := s.Load(context.Background(), subject)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

func batchStoredWhole(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	a, err := s.Append(ctx, "test.a", 0, "", ev("a0"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.AppendAll(ctx, []eventlog.Write{
		write("test.a", a.Seq, "cmd-a", "a1"), write("test.b", 0, "cmd-b", "b0"), write("test.c", eventlog.AnySeq, "", "c0"),
	})
	if err != nil || len(res) != 3 {
		t.Fatalf("batch: %+v %v", res, err)
	}
	for i, want := range []struct{ subject, data, commandID string }{{"test.a", "a1", "cmd-a"}, {"test.b", "b0", "cmd-b"}, {"test.c", "c0", ""}} {
		if res[i].Duplicate || (i > 0 && res[i].Seq != res[i-1].Seq+1) || res[i].Seq <= a.Seq {
			t.Fatalf("the batch's sequences are not consecutive after what came before: %+v", res)
		}
		rec, found, err := s.Last(ctx, want.subject)
		if err != nil || !found || rec.Seq != res[i].Seq || string(rec.Data) != want.data || rec.Type != "test.happened" ||
			(want.commandID != "" && rec.CommandID != want.commandID) {
			t.Fatalf("%s: %+v %v %v, want %q at %d", want.subject, rec, found, err, want.data, res[i].Seq)
		}
	}
	if rec, found, err := s.FindCommand(ctx, "test.b", "cmd-b"); err != nil || !found || rec.Seq != res[1].Seq {
		t.Fatalf("a batch's command is found as an append's is: %+v %v %v", rec, found, err)
	}
}

func batchStaleStoresNothing(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	if _, err := s.Append(ctx, "test.b", 0, "", ev("b0")); err != nil {
		t.Fatal(err)
	}
	// test.a is new and would take its event; test.b moved on.
	_, err := s.AppendAll(ctx, []eventlog.Write{write("test.a", 0, "", "a0"), write("test.b", 0, "", "b stale")})
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("a batch with a stale subject: %v", err)
	}
	if n, m := subjectLen(t, s, "test.a"), subjectLen(t, s, "test.b"); n != 0 || m != 1 {
		t.Fatalf("a refused batch was stored in part: test.a holds %d, test.b %d", n, m)
	}
}

func batchRetried(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	batch := []eventlog.Write{write("test.a", 0, "cmd-1a", "a0"), write("test.b", 0, "cmd-1b", "b0")}
	if _, err := s.AppendAll(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// Sent again as it was (stale expectations), or with fresh ones:
	// refused either way, and found by its command ids.
	if _, err := s.AppendAll(ctx, batch); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("a batch sent again: %v", err)
	}
	la, _, _ := s.Last(ctx, "test.a")
	lb, _, _ := s.Last(ctx, "test.b")
	if _, err := s.AppendAll(ctx, []eventlog.Write{write("test.a", la.Seq, "cmd-1a", "a0"), write("test.b", lb.Seq, "cmd-1b", "b0")}); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("a batch sent again against fresh sequences: %v", err)
	}
	if n, m := subjectLen(t, s, "test.a"), subjectLen(t, s, "test.b"); n != 1 || m != 1 {
		t.Fatalf("a retried batch was stored again: test.a holds %d, test.b %d", n, m)
	}
}

func batchOneWinner(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	// Twenty writers, each pairing test.shared with a subject of its own:
	// one batch lands, and no other leaves its own subject written.
	oneOfTwentyWins(t, func(i int) error {
		_, err := s.AppendAll(ctx, []eventlog.Write{write(fmt.Sprintf("test.own.%d", i), 0, "", "own"), write("test.shared", 0, "", fmt.Sprint(i))})
		return err
	})
	rec, _, err := s.Last(ctx, "test.shared")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if n := subjectLen(t, s, fmt.Sprintf("test.own.%d", i)); n != 0 && string(rec.Data) != fmt.Sprint(i) {
			t.Fatalf("writer %d lost test.shared but its own subject holds %d", i, n)
		}
	}
}

func batchRefused(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	if _, err := s.AppendAll(ctx, nil); !errors.Is(err, eventlog.ErrBadBatch) {
		t.Fatalf("a batch of nothing: %v", err)
	}
	if _, err := s.AppendAll(ctx, []eventlog.Write{write("test.a", 0, "", "1"), write("test.a", 0, "", "2")}); !errors.Is(err, eventlog.ErrBadBatch) {
		t.Fatalf("a batch writing one subject twice: %v", err)
	}
	if n := subjectLen(t, s, "test.a"); n != 0 {
		t.Fatalf("a refused batch stored %d", n)
	}
}
