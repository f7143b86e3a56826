package domain

import (
	"fmt"
	"math"
	"testing"
)

func TestRunIDFormat(t *testing.T) {
	cases := []struct {
		inv   string
		index int
		want  string
	}{
		{"tinv_abc", 0, "trun_abc_0"},
		{"tinv_abc", 7, "trun_abc_7"},
		{"tinv_abc", 249999, "trun_abc_249999"},
		{"abc", 3, "trun_abc_3"},                // no tinv_ prefix: used as is
		{"tinv_a_b", 12, "trun_a_b_12"},         // underscores in the id survive
		{"tinv_tinv_x", 1, "trun_tinv_x_1"},     // only one prefix is trimmed
		{"tinv_01HZX", 5000, "trun_01HZX_5000"}, // ULID-like ids
	}
	for _, c := range cases {
		if got := RunID(c.inv, c.index); got != c.want {
			t.Errorf("RunID(%q, %d) = %q, want %q", c.inv, c.index, got, c.want)
		}
	}
}

func TestRunIndexRoundTrip(t *testing.T) {
	for _, inv := range []string{"tinv_abc", "tinv_a_b_c", "abc", "tinv_9", "tinv_"} {
		for _, i := range []int{0, 1, 9, 10, 63, 64, 99, 100, 4999, 5000, 249_999, math.MaxInt32} {
			id := RunID(inv, i)
			got, err := RunIndex(inv, id)
			if err != nil || got != i {
				t.Fatalf("RunIndex(%q, %q) = %d, %v; want %d", inv, id, got, err, i)
			}
		}
	}
}

func TestRunIndexRejectsMalformedIDs(t *testing.T) {
	cases := []struct {
		inv, run string
	}{
		{"tinv_abc", ""},
		{"tinv_abc", "trun_abc"},
		{"tinv_abc", "trun_abc_"},                     // no index
		{"tinv_abc", "trun_abc_x"},                    // not a number
		{"tinv_abc", "trun_abc_-1"},                   // negative
		{"tinv_abc", "trun_abc_+1"},                   // sign
		{"tinv_abc", "trun_abc_01"},                   // leading zero: not canonical
		{"tinv_abc", "trun_abc_00"},                   // leading zero
		{"tinv_abc", "trun_abc_1 "},                   // trailing space
		{"tinv_abc", "trun_abc_ 1"},                   // inner space
		{"tinv_abc", "trun_abc_1.0"},                  // not an integer
		{"tinv_abc", "trun_abc_1_2"},                  // a run of another invocation (tinv_abc_1)
		{"tinv_abc", "trun_abc_99999999999999999999"}, // overflows int
		{"tinv_abc", "trun_abd_1"},                    // another invocation
		{"tinv_abc", "trun_abcd_1"},                   // an invocation with a longer id
		{"tinv_abc", "trun_ab_1"},                     // a shorter id
		{"tinv_abc", "TRUN_abc_1"},                    // case matters
		{"tinv_abc", "tinv_abc_1"},                    // wrong kind prefix
		{"tinv_abc", "xtrun_abc_1"},                   // prefix not at the start
		{"tinv_abc_1", "trun_abc_1"},                  // a shorter invocation's run is not ours
	}
	for _, c := range cases {
		if i, err := RunIndex(c.inv, c.run); err == nil {
			t.Errorf("RunIndex(%q, %q) = %d, want an error", c.inv, c.run, i)
		}
	}
	// A run id of a longer invocation id that shares the prefix reads as
	// that invocation's own run, not ours.
	if i, err := RunIndex("tinv_abc_1", "trun_abc_1_2"); err != nil || i != 2 {
		t.Fatalf("RunIndex(tinv_abc_1, trun_abc_1_2) = %d, %v", i, err)
	}
}

func TestBitset(t *testing.T) {
	for _, c := range []struct{ n, words int }{{0, 0}, {1, 1}, {63, 1}, {64, 1}, {65, 2}, {128, 2}, {129, 3}, {5000, 79}} {
		if got := len(NewBitset(c.n)); got != c.words {
			t.Errorf("NewBitset(%d) has %d words, want %d", c.n, got, c.words)
		}
	}

	const n = 200
	set := map[int]bool{0: true, 1: true, 62: true, 63: true, 64: true, 127: true, 128: true, 199: true}
	b := NewBitset(n)
	for i := 0; i < n; i++ {
		if b.Has(i) {
			t.Fatalf("new bitset has bit %d", i)
		}
	}
	for i := range set {
		b.Set(i)
		b.Set(i) // idempotent
	}
	for i := 0; i < n; i++ {
		if b.Has(i) != set[i] {
			t.Fatalf("Has(%d) = %v, want %v", i, b.Has(i), set[i])
		}
	}
	// Bit 63 is the top bit of the first word, bit 64 the bottom of the second.
	if b[0]>>63 != 1 || b[1]&1 != 1 {
		t.Fatalf("word layout: %x", []uint64(b))
	}
}

func TestBitsetEveryBitIndependently(t *testing.T) {
	const n = 130
	for i := 0; i < n; i++ {
		b := NewBitset(n)
		b.Set(i)
		for j := 0; j < n; j++ {
			if b.Has(j) != (i == j) {
				t.Fatalf("after Set(%d): Has(%d) = %v", i, j, b.Has(j))
			}
		}
	}
}

func TestBitsetOutOfRangePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Set beyond the capacity did not panic")
		}
	}()
	NewBitset(64).Set(64)
}

func TestStateConstants(t *testing.T) {
	// These strings are wire values (spec 2.2, 2.3): they must not drift.
	got := []string{RunPending, RunPassed, RunFailed, RunCancelled,
		InvocationRunning, InvocationCompleted, InvocationCancelled,
		BucketingPending, BucketingCompleted, BucketingFailed,
		ConditionSuccess, ConditionFailure, ConditionUnknown}
	want := []string{"pending", "passed", "failed", "cancelled",
		"running", "completed", "cancelled",
		"pending", "completed", "failed",
		"success", "failure", "unknown"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("constants %v, want %v", got, want)
	}
	if MaxRepeatCount != 50 || MaxTestsPerRun != 5000 {
		t.Fatalf("limits: repeat %d tests %d", MaxRepeatCount, MaxTestsPerRun)
	}
}

func TestRunsPerJob(t *testing.T) {
	for total, want := range map[int]int{1: 1, 1600: 1, 9999: 1, 10_000: 2, 50_000: 10, 80_000: 16, 250_000: 16} {
		if got := RunsPerJob(total); got != want {
			t.Errorf("RunsPerJob(%d) = %d, want %d", total, got, want)
		}
	}
}
