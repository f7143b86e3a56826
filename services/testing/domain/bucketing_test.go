package domain

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func br(id, status, response, reason string) BucketRun {
	return BucketRun{RunID: id, Status: status, Response: response, Reason: reason}
}

func ids(bs []Bucket) [][]string {
	out := make([][]string, len(bs))
	for i, b := range bs {
		out[i] = b.RunIDs
	}
	return out
}

func TestBucketRunsGrouping(t *testing.T) {
	const (
		hours     = "Our opening hours are nine to five."
		hoursMore = "Our opening hours are nine to five on weekdays." // 7/9 = 0.78 of hours
		hoursCase = "OUR opening-hours are: nine, to five!"           // same words as hours
		refund    = "Refunds are never given for cancelled bookings."
	)
	cases := []struct {
		name string
		runs []BucketRun
		want [][]string
	}{
		{"no runs", nil, [][]string{}},
		{"one run", []BucketRun{br("r0", RunPassed, hours, "")}, [][]string{{"r0"}}},
		{"same status, similar responses share a bucket",
			[]BucketRun{br("r0", RunPassed, hours, ""), br("r1", RunPassed, hoursMore, ""), br("r2", RunPassed, hoursCase, "")},
			[][]string{{"r0", "r1", "r2"}}},
		{"identical responses with different outcomes never share",
			[]BucketRun{br("r0", RunPassed, hours, ""), br("r1", RunFailed, hours, ""), br("r2", RunCancelled, hours, "")},
			[][]string{{"r0"}, {"r1"}, {"r2"}}},
		{"dissimilar responses with the same outcome are apart",
			[]BucketRun{br("r0", RunFailed, hours, ""), br("r1", RunFailed, refund, "")},
			[][]string{{"r0"}, {"r1"}}},
		{"empty responses are similar to each other only",
			[]BucketRun{br("r0", RunFailed, "", ""), br("r1", RunFailed, hours, ""), br("r2", RunFailed, "  ...  ", "")},
			[][]string{{"r0", "r2"}, {"r1"}}},
		{"largest bucket first; ties keep first-seen order",
			[]BucketRun{
				br("r0", RunFailed, refund, ""), br("r1", RunPassed, hours, ""), br("r2", RunPassed, hours, ""),
				br("r3", RunFailed, "Something else entirely.", ""), br("r4", RunPassed, hoursMore, ""),
			},
			[][]string{{"r1", "r2", "r4"}, {"r0"}, {"r3"}}},
		{"interleaved outcomes",
			[]BucketRun{
				br("r0", RunPassed, hours, ""), br("r1", RunFailed, hours, ""), br("r2", RunPassed, hours, ""),
				br("r3", RunFailed, hours, ""), br("r4", RunFailed, hours, ""),
			},
			[][]string{{"r1", "r3", "r4"}, {"r0", "r2"}}},
		// Similarity is measured against each bucket's first response, not
		// transitively: c is close to b (0.75) but not to a (0.5), the
		// first response of the bucket b joined, so c starts a new one.
		{"greedy against the first response of a bucket",
			[]BucketRun{
				br("a", RunPassed, "w1 w2 w3 w4 w5", ""),
				br("b", RunPassed, "w1 w2 w3 w4 w5 w6 w7", ""),    // 5/7 of a
				br("c", RunPassed, "w2 w3 w4 w5 w6 w7 w8", ""),    // 4/8 of a
				br("d", RunPassed, "w2 w3 w4 w5 w6 w7 w8 w9", ""), // 4/9 of a, 7/8 of c
			},
			[][]string{{"a", "b"}, {"c", "d"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := BucketRuns(c.runs)
			if g := ids(got); !reflect.DeepEqual(g, c.want) {
				t.Fatalf("buckets %v, want %v", g, c.want)
			}
		})
	}
}

func TestBucketRunsThreshold(t *testing.T) {
	// Jaccard exactly at the threshold groups; just below does not.
	at := BucketRuns([]BucketRun{br("a", RunPassed, "x1 x2 x3", ""), br("b", RunPassed, "x1 x2 x3 x4 x5", "")}) // 3/5 = 0.6
	if len(at) != 1 {
		t.Fatalf("similarity 0.6 split into %v", ids(at))
	}
	below := BucketRuns([]BucketRun{br("a", RunPassed, "x1 x2 x3 x4", ""), br("b", RunPassed, "x1 x2 x3 x4 x5 x6 x7", "")}) // 4/7 = 0.57
	if len(below) != 2 {
		t.Fatalf("similarity 0.57 grouped into %v", ids(below))
	}
	if SimilarityThreshold != 0.6 {
		t.Fatalf("threshold %v", SimilarityThreshold)
	}
}

func TestBucketFields(t *testing.T) {
	long := strings.Repeat("word ", 30) // 150 bytes
	runs := []BucketRun{
		br("r0", RunPassed, "  We are open\n nine\tto five.  ", "The reply gives the hours."),
		br("r1", RunPassed, "We are open nine to five", "Another reason, not shown."),
		br("r2", RunFailed, "", "The agent said nothing."),
		br("r3", RunCancelled, long, ""),
		br("r4", RunFailed, strings.Repeat("é", 100), "multibyte"),
	}
	got := BucketRuns(runs)
	want := []Bucket{
		{RunIDs: []string{"r0", "r1"}, Status: RunPassed, Title: "Passed: We are open nine to five.",
			Reason: "2 run(s) passed with similar responses. The reply gives the hours."},
		{RunIDs: []string{"r2"}, Status: RunFailed, Title: "Failed: (no response)",
			Reason: "1 run(s) failed with similar responses. The agent said nothing."},
		{RunIDs: []string{"r3"}, Status: RunCancelled, Title: "Cancelled: " + strings.TrimSpace(long)[:77] + "...",
			Reason: "1 run(s) cancelled with similar responses. "},
		{RunIDs: []string{"r4"}, Status: RunFailed, Title: "Failed: " + strings.Repeat("é", 77) + "...",
			Reason: "1 run(s) failed with similar responses. multibyte"},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			t.Logf("got  %d: %+v", i, got[i])
		}
		for i := range want {
			t.Logf("want %d: %+v", i, want[i])
		}
		t.Fatal("bucket fields differ")
	}
	// A response of exactly 80 runes is not truncated; 81 runes are.
	exact := strings.Repeat("a", 80)
	if b := BucketRuns([]BucketRun{br("r", RunPassed, exact, "")}); b[0].Title != "Passed: "+exact {
		t.Fatalf("80-rune title %q", b[0].Title)
	}
	if b := BucketRuns([]BucketRun{br("r", RunPassed, exact+"b", "")}); b[0].Title != "Passed: "+exact[:77]+"..." {
		t.Fatalf("81-rune title %q", b[0].Title)
	}
}

func TestBucketRunsEmptyStatusDoesNotPanic(t *testing.T) {
	b := BucketRuns([]BucketRun{br("r0", "", "hello", ""), br("r1", "", "hello", "")})
	if len(b) != 1 || len(b[0].RunIDs) != 2 || b[0].Status != "" || !strings.Contains(b[0].Title, "hello") {
		t.Fatalf("buckets %+v", b)
	}
}

// A larger, varied set: every run id lands in exactly one bucket, every
// bucket holds one status, and the result is the same every time.
func TestBucketRunsPartitionAndDeterminism(t *testing.T) {
	templates := []string{
		"Our opening hours are nine to five every weekday.",
		"Refunds are never given for cancelled bookings.",
		"I booked a table for %d guests on Friday.",
		"Sorry, I cannot help with that request number %d.",
		"",
	}
	statuses := []string{RunPassed, RunFailed, RunFailed, RunCancelled}
	var runs []BucketRun
	for i := 0; i < 250; i++ {
		resp := templates[(i*7)%len(templates)]
		if strings.Contains(resp, "%d") {
			resp = fmt.Sprintf(resp, i%3)
		}
		runs = append(runs, br(RunID("tinv_x", i), statuses[(i*5)%len(statuses)], resp, fmt.Sprint("reason ", i)))
	}
	status := map[string]string{}
	for _, r := range runs {
		status[r.RunID] = r.Status
	}
	first := BucketRuns(runs)
	seen := map[string]int{}
	for bi, b := range first {
		if len(b.RunIDs) == 0 {
			t.Fatalf("bucket %d is empty", bi)
		}
		for _, id := range b.RunIDs {
			seen[id]++
			if status[id] != b.Status {
				t.Fatalf("run %s (%s) in a %s bucket", id, status[id], b.Status)
			}
		}
		if !strings.HasPrefix(b.Reason, fmt.Sprintf("%d run(s) %s ", len(b.RunIDs), b.Status)) {
			t.Fatalf("bucket %d reason %q", bi, b.Reason)
		}
		if !strings.HasPrefix(strings.ToLower(b.Title), b.Status+": ") {
			t.Fatalf("bucket %d title %q", bi, b.Title)
		}
		if bi > 0 && len(first[bi-1].RunIDs) < len(b.RunIDs) {
			t.Fatalf("bucket %d (%d runs) after a smaller one", bi, len(b.RunIDs))
		}
	}
	if len(seen) != len(runs) {
		t.Fatalf("%d of %d runs bucketed", len(seen), len(runs))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("run %s in %d buckets", id, n)
		}
	}
	for i := 0; i < 5; i++ {
		if again := BucketRuns(runs); !reflect.DeepEqual(again, first) {
			t.Fatal("BucketRuns is not deterministic")
		}
	}
	// Runs keep their input order inside a bucket.
	pos := map[string]int{}
	for i, r := range runs {
		pos[r.RunID] = i
	}
	for _, b := range first {
		if !sort.SliceIsSorted(b.RunIDs, func(i, j int) bool { return pos[b.RunIDs[i]] < pos[b.RunIDs[j]] }) {
			t.Fatalf("bucket runs out of order: %v", b.RunIDs)
		}
	}
}

func TestBucketRunsDoesNotModifyInput(t *testing.T) {
	runs := []BucketRun{br("r0", RunPassed, "a b", "x"), br("r1", RunPassed, "a b", "y")}
	cp := append([]BucketRun(nil), runs...)
	BucketRuns(runs)
	if !reflect.DeepEqual(runs, cp) {
		t.Fatal("input changed")
	}
}

func TestTokensAndJaccard(t *testing.T) {
	set := func(ws ...string) map[string]bool {
		m := map[string]bool{}
		for _, w := range ws {
			m[w] = true
		}
		return m
	}
	tok := []struct {
		in   string
		want map[string]bool
	}{
		{"", set()},
		{"  ,.!  ", set()},
		{"Hello, hello WORLD!", set("hello", "world")},
		{"book_table(guests=4)", set("book", "table", "guests", "4")},
		{`{"city":"Zürich"}`, set("city", "zürich")},
		{"nine-to-five 9:00", set("nine", "to", "five", "9", "00")},
	}
	for _, c := range tok {
		if got := Tokens(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokens(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	jac := []struct {
		a, b map[string]bool
		want float64
	}{
		{set(), set(), 1},
		{set("a"), set(), 0},
		{set(), set("a"), 0},
		{set("a", "b"), set("a", "b"), 1},
		{set("a", "b"), set("c", "d"), 0},
		{set("a", "b", "c"), set("a", "b", "c", "d", "e"), 0.6},
		{set("a", "b"), set("b", "c"), 1.0 / 3},
	}
	for _, c := range jac {
		if got := Jaccard(c.a, c.b); got != c.want {
			t.Errorf("Jaccard(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Jaccard(c.b, c.a); got != c.want {
			t.Errorf("Jaccard is not symmetric for %v, %v", c.a, c.b)
		}
	}
}
