// Package eventlogtest is the one conformance suite of the eventlog port:
// every implementation (JetStream, memory) runs it, so a use case tested
// on the memory store behaves the same on the real one.
package eventlogtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// Open returns an empty store whose log takes subjects "test.>".
type Open func(t *testing.T) eventlog.Store

// Run runs every case on fresh stores from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		run  func(*testing.T, eventlog.Store)
	}{
		{"AppendAndLoadInOrder", appendAndLoadInOrder},
		{"EmptySubject", emptySubject},
		{"Conflicts", conflicts},
		{"AnySeqAppendsWhateverTheSubjectHolds", anySeq},
		{"OneWinnerAmongConcurrentWriters", oneWinner},
		{"RetriedCommandIsADuplicate", retriedCommand},
		{"DuplicateInFlightIsStoredOnce", duplicateInFlight},
		{"FindCommandInHistory", findCommand},
		{"AtReadsBySequence", at},
		{"RetryReloadsOnConflict", retryReloads},
		{"BatchIsStoredWhole", batchStoredWhole},
		{"BatchWithAStaleSubjectStoresNothing", batchStaleStoresNothing},
		{"RetriedBatchStoresNothingAgain", batchRetried},
		{"OneWinnerAmongOverlappingBatches", batchOneWinner},
		{"BatchOfNothingOrOneSubjectTwiceIsRefused", batchRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

func ev(data string) eventlog.Event {
	return eventlog.Event{Type: "test.happened", Workspace: "ws", Data: []byte(data)}
}

func appendAndLoadInOrder(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	first := ev("1")
	first.Header = eventlog.Header{"traceparent": {"00-trace"}}
	a1, err := s.Append(ctx, "test.a", 0, "cmd-1", first)
	if err != nil || a1.Duplicate || a1.Seq == 0 {
		t.Fatalf("first append: %+v %v", a1, err)
	}
	other, err := s.Append(ctx, "test.b", 0, "", ev("other"))
	if err != nil || other.Seq <= a1.Seq {
		t.Fatalf("sequences rise across subjects: %d then %+v %v", a1.Seq, other, err)
	}
	a2, err := s.Append(ctx, "test.a", a1.Seq, "", ev("2"))
	if err != nil || a2.Seq <= other.Seq {
		t.Fatalf("second append: %+v %v", a2, err)
	}
	recs, last, err := s.Load(ctx, "test.a")
	if err != nil {
		t.Fatal(err)
	}
	if last != a2.Seq || len(recs) != 2 || string(recs[0].Data) != "1" || string(recs[1].Data) != "2" {
		t.Fatalf("history: last=%d %+v", last, recs)
	}
	r := recs[0]
	if r.Seq != a1.Seq || r.Subject != "test.a" || r.Type != "test.happened" || r.Workspace != "ws" || r.EventID == "" ||
		r.CommandID != "cmd-1" || r.Header.Get("traceparent") != "00-trace" || r.Time.IsZero() {
		t.Fatalf("what was appended is not what is read: %+v", r)
	}
	if recs[1].CommandID != recs[1].EventID {
		t.Fatalf("without a command id, the event id is the command id: %+v", recs[1])
	}
	rec, found, err := s.Last(ctx, "test.a")
	if err != nil || !found || string(rec.Data) != "2" || rec.Seq != a2.Seq {
		t.Fatalf("last: %+v %v %v", rec, found, err)
	}
}

func emptySubject(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	recs, last, err := s.Load(ctx, "test.none")
	if err != nil || recs != nil || last != 0 {
		t.Fatalf("empty load: %v %d %v", recs, last, err)
	}
	if _, found, err := s.Last(ctx, "test.none"); err != nil || found {
		t.Fatalf("empty last: %v %v", found, err)
	}
	if _, found, err := s.FindCommand(ctx, "test.none", "cmd"); err != nil || found {
		t.Fatalf("command on an empty subject: %v %v", found, err)
	}
}

func conflicts(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	a, err := s.Append(ctx, "test.a", 0, "", ev("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "test.a", 0, "", ev("create again")); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("create-only on an existing subject: %v", err)
	}
	if _, err := s.Append(ctx, "test.a", 0, "cmd-new", ev("create again, keyed")); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("a new command creating an existing subject: %v", err)
	}
	if _, err := s.Append(ctx, "test.a", a.Seq, "", ev("2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "test.a", a.Seq, "", ev("stale")); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("stale expected sequence: %v", err)
	}
	if recs, _, _ := s.Load(ctx, "test.a"); len(recs) != 2 {
		t.Fatalf("a refused append was stored: %d events", len(recs))
	}
}

func anySeq(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	for i := range 3 {
		if _, err := s.Append(ctx, "test.a", eventlog.AnySeq, "", ev(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if recs, _, err := s.Load(ctx, "test.a"); err != nil || len(recs) != 3 {
		t.Fatalf("history: %d %v", len(recs), err)
	}
}

func oneWinner(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	base, err := s.Append(ctx, "test.a", 0, "", ev("0"))
	if err != nil {
		t.Fatal(err)
	}
	oneOfTwentyWins(t, func(i int) error {
		_, err := s.Append(ctx, "test.a", base.Seq, "", ev(fmt.Sprint(i)))
		return err
	})
}

// oneOfTwentyWins runs twenty writers at once, and fails unless exactly
// one lands and the others meet a conflict.
func oneOfTwentyWins(t *testing.T, write func(i int) error) {
	t.Helper()
	var wins, lost atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			switch err := write(i); {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, eventlog.ErrConflict):
				lost.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || lost.Load() != 19 {
		t.Fatalf("wins=%d conflicts=%d, want 1 and 19", wins.Load(), lost.Load())
	}
}

func retriedCommand(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	first, err := s.Append(ctx, "test.a", 0, "cmd-1", ev("1"))
	if err != nil || first.Duplicate {
		t.Fatalf("first: %+v %v", first, err)
	}
	// A retry of the same command carries the same, now stale, expected
	// sequence: it is answered as a duplicate, not a conflict.
	again, err := s.Append(ctx, "test.a", 0, "cmd-1", ev("1"))
	if err != nil || !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("retry: %+v %v", again, err)
	}
	// So is a retry of an update after later changes.
	upd, err := s.Append(ctx, "test.a", first.Seq, "cmd-2", ev("2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "test.a", upd.Seq, "", ev("3")); err != nil {
		t.Fatal(err)
	}
	replay, err := s.Append(ctx, "test.a", first.Seq, "cmd-2", ev("2 again"))
	if err != nil || !replay.Duplicate || replay.Seq != upd.Seq {
		t.Fatalf("replay of an older update: %+v %v", replay, err)
	}
	if recs, _, err := s.Load(ctx, "test.a"); err != nil || len(recs) != 3 {
		t.Fatalf("history after retries: %d %v", len(recs), err)
	}
	// Without an expected sequence, the command id alone tells a retry.
	any1, err := s.Append(ctx, "test.b", eventlog.AnySeq, "cmd-any", ev("x"))
	if err != nil {
		t.Fatal(err)
	}
	any2, err := s.Append(ctx, "test.b", eventlog.AnySeq, "cmd-any", ev("x"))
	if err != nil || !any2.Duplicate || any2.Seq != any1.Seq {
		t.Fatalf("a retried append at any sequence: %+v %v", any2, err)
	}
}

func duplicateInFlight(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([]eventlog.Appended, 8)
	for i := range results {
		wg.Go(func() {
			res, err := s.Append(ctx, "test.a", 0, "cmd-once", ev("1"))
			if err != nil {
				t.Errorf("copy %d: %v", i, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	firsts := 0
	for _, r := range results {
		if !r.Duplicate {
			firsts++
		}
		if r.Seq != results[0].Seq {
			t.Fatalf("copies answered different events: %+v", results)
		}
	}
	if recs, _, err := s.Load(ctx, "test.a"); err != nil || len(recs) != 1 || firsts != 1 {
		t.Fatalf("stored %d events, %d answered as first: %v", len(recs), firsts, err)
	}
}

func findCommand(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	var seq uint64
	for i := range 4 {
		res, err := s.Append(ctx, "test.a", seq, fmt.Sprintf("cmd-%d", i), ev(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		seq = res.Seq
	}
	rec, found, err := s.FindCommand(ctx, "test.a", "cmd-1")
	if err != nil || !found || string(rec.Data) != "1" {
		t.Fatalf("an older command: %+v %v %v", rec, found, err)
	}
	if rec, found, err = s.FindCommand(ctx, "test.a", "cmd-3"); err != nil || !found || rec.Seq != seq {
		t.Fatalf("the last command: %+v %v %v", rec, found, err)
	}
	if _, found, err := s.FindCommand(ctx, "test.a", "cmd-unknown"); err != nil || found {
		t.Fatalf("an unknown command: %v %v", found, err)
	}
	if _, found, err := s.FindCommand(ctx, "test.b", "cmd-1"); err != nil || found {
		t.Fatalf("a command of another subject: %v %v", found, err)
	}
}

func at(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	res, err := s.Append(ctx, "test.a", 0, "", ev("1"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.At(ctx, res.Seq)
	if err != nil || rec.Subject != "test.a" || string(rec.Data) != "1" {
		t.Fatalf("at %d: %+v %v", res.Seq, rec, err)
	}
	if _, err := s.At(ctx, res.Seq+1000); err == nil {
		t.Fatal("a sequence past the end was read")
	}
}

func retryReloads(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	if _, err := s.Append(ctx, "test.a", 0, "", ev("0")); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	err := eventlog.Retry(ctx, 5, func() error {
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
