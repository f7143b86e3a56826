// Package runslogtest is the one conformance suite of app.RunsLog: every
// implementation (JetStream, memory) runs it.
package runslogtest

import (
	"context"
	"errors"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Open returns an empty runs log.
type Open func(t *testing.T) app.RunsLog

// Run runs every case on fresh logs from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		run  func(*testing.T, app.RunsLog)
	}{
		{"PublishIsIdempotentByID", idempotent},
		{"LastIsTheSubjectsNewest", lastPerSubject},
		{"EachLastInLogOrder", eachLast},
		{"EachHeaderReadsEveryRecordInOrder", eachHeader},
		{"EachEndsWithItsCallbacksError", eachEnds},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

func run(t *testing.T, inv, id string) string {
	t.Helper()
	s, err := events.RunSubject("ws", inv, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func filter(t *testing.T, inv string) string {
	t.Helper()
	f, err := events.RunsOfInvocation("ws", inv)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func publish(t *testing.T, l app.RunsLog, subject, id, data string) bool {
	t.Helper()
	dup, err := l.Publish(context.Background(), app.Message{Subject: subject, ID: id, Data: []byte(data),
		Header: eventlog.Header{"Voiceai-Test": {data}}})
	if err != nil {
		t.Fatal(err)
	}
	return dup
}

// collect is what each (EachLast or EachHeader) gives for filter: the
// records' subjects and header values, in order.
func collect(t *testing.T, each func(context.Context, string, func(app.Record) error) error, f string) []app.Record {
	t.Helper()
	var out []app.Record
	if err := each(context.Background(), f, func(r app.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func idempotent(t *testing.T, l app.RunsLog) {
	s := run(t, "tinv_a", "run_1")
	if publish(t, l, s, "id-1", "first") {
		t.Fatal("a first publish is a duplicate")
	}
	if !publish(t, l, s, "id-1", "retry") {
		t.Fatal("a retried id is not a duplicate")
	}
	rec, found, err := l.Last(context.Background(), s)
	if err != nil || !found || string(rec.Data) != "first" {
		t.Fatalf("last after a retry: %q found %v %v; want the first", rec.Data, found, err)
	}
	if n := len(collect(t, l.EachHeader, filter(t, "tinv_a"))); n != 1 {
		t.Fatalf("%d records stored; want 1", n)
	}
	if publish(t, l, s, "id-2", "second") {
		t.Fatal("another id is a duplicate")
	}
}

func lastPerSubject(t *testing.T, l app.RunsLog) {
	ctx := context.Background()
	if _, found, err := l.Last(ctx, run(t, "tinv_a", "run_1")); err != nil || found {
		t.Fatalf("empty subject: found %v, %v", found, err)
	}
	a, b := history(t, l)
	for subject, want := range map[string]string{a: "a2", b: "b1"} {
		rec, found, err := l.Last(ctx, subject)
		if err != nil || !found || string(rec.Data) != want || rec.Subject != subject {
			t.Fatalf("last of %s: %q found %v %v; want %q", subject, rec.Data, found, err, want)
		}
		if rec.Time.IsZero() {
			t.Fatalf("last of %s has no time", subject)
		}
	}
}

// history publishes, in this order, a1 and b1 on runs 1 and 2 of
// tinv_a, a2 on its run 1, and o1 on a run of another invocation (outside
// tinv_a's filter); it returns the subjects of tinv_a's runs.
func history(t *testing.T, l app.RunsLog) (run1, run2 string) {
	t.Helper()
	run1, run2 = run(t, "tinv_a", "run_1"), run(t, "tinv_a", "run_2")
	publish(t, l, run1, "a1", "a1")
	publish(t, l, run2, "b1", "b1")
	publish(t, l, run1, "a2", "a2")
	publish(t, l, run(t, "tinv_other", "run_1"), "o1", "o1")
	return run1, run2
}

func eachLast(t *testing.T, l app.RunsLog) {
	history(t, l)
	got := collect(t, l.EachLast, filter(t, "tinv_a"))
	if len(got) != 2 || string(got[0].Data) != "b1" || string(got[1].Data) != "a2" {
		t.Fatalf("each last: %v; want b1 then a2", got)
	}
	if got := collect(t, l.EachLast, filter(t, "tinv_none")); len(got) != 0 {
		t.Fatalf("each last of nothing: %v", got)
	}
}

func eachHeader(t *testing.T, l app.RunsLog) {
	history(t, l)
	got := collect(t, l.EachHeader, filter(t, "tinv_a"))
	want := []string{"a1", "b1", "a2"}
	if len(got) != len(want) {
		t.Fatalf("%d records; want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Header.Get("Voiceai-Test") != want[i] {
			t.Fatalf("record %d has header %q; want %q", i, r.Header.Get("Voiceai-Test"), want[i])
		}
		full, err := l.At(context.Background(), r.Seq) // the data, by its sequence
		if err != nil || string(full.Data) != want[i] || full.Subject != r.Subject {
			t.Fatalf("at %d: %q %v; want %q", r.Seq, full.Data, err, want[i])
		}
	}
}

// eachEnds: an error the callback returns ends the read and is returned
// (the review queue ends its reads so once it has its page).
func eachEnds(t *testing.T, l app.RunsLog) {
	history(t, l)
	stop := errors.New("stop")
	for name, each := range map[string]func(context.Context, string, func(app.Record) error) error{
		"EachLast": l.EachLast, "EachHeader": l.EachHeader} {
		n := 0
		err := each(context.Background(), filter(t, "tinv_a"), func(app.Record) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Fatalf("%s: %d records read, %v; want 1 and the callback's error", name, n, err)
		}
	}
}
