package domain

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/voiceai-platform/voiceai/pkg/textsim"
)

// BucketRun is what bucketing needs of a run.
type BucketRun struct {
	RunID    string
	Status   string
	Response string // the agent's reply text, tool calls included
	Reason   string // the judge's summary
}

// Bucket gathers runs of one test with the same status and similar
// responses.
type Bucket struct {
	RunIDs []string
	Title  string
	Reason string
	Status string
}

// SimilarityThreshold is the token-set Jaccard similarity at or above
// which two responses share a bucket.
const SimilarityThreshold = 0.6

// BucketRuns groups runs: first by status, then greedily by response
// similarity to each bucket's first response, in run order, so the same
// runs always give the same buckets. Buckets come largest first.
func BucketRuns(runs []BucketRun) []Bucket {
	type group struct {
		b      Bucket
		tokens map[string]bool
	}
	var groups []*group
	for _, r := range runs {
		toks := Tokens(r.Response)
		var home *group
		for _, g := range groups {
			if g.b.Status == r.Status && Jaccard(g.tokens, toks) >= SimilarityThreshold {
				home = g
				break
			}
		}
		if home == nil {
			home = &group{b: Bucket{Status: r.Status, Title: title(r), Reason: r.Reason}, tokens: toks}
			groups = append(groups, home)
		}
		home.b.RunIDs = append(home.b.RunIDs, r.RunID)
	}
	out := make([]Bucket, len(groups))
	for i, g := range groups {
		out[i] = g.b
		n := len(g.b.RunIDs)
		out[i].Reason = fmt.Sprintf("%d run(s) %s with similar responses. %s", n, g.b.Status, g.b.Reason)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].RunIDs) > len(out[j].RunIDs) })
	return out
}

// PendingBucket holds the runs of a test while some of them are
// outstanding: buckets are made only once every run of the round has
// finished, so until then the test's runs share one bucket, status
// pending.
func PendingBucket(runIDs []string) Bucket {
	return Bucket{RunIDs: runIDs, Status: RunPending, Title: fmt.Sprintf("Pending: %d run(s)", len(runIDs)),
		Reason: "Runs of this test are outstanding; its runs are grouped once every run of the invocation has finished."}
}

func title(r BucketRun) string {
	resp := strings.Join(strings.Fields(r.Response), " ")
	if resp == "" {
		resp = "(no response)"
	}
	if n := []rune(resp); len(n) > 80 {
		resp = string(n[:77]) + "..."
	}
	if r.Status == "" {
		return resp
	}
	return strings.ToUpper(r.Status[:1]) + r.Status[1:] + ": " + resp
}

// Tokens is the set of lower-cased words of s.
func Tokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}

// Jaccard is |a∩b| / |a∪b|, where two runs that said nothing said the
// same: two empty sets are identical.
func Jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	return textsim.Jaccard(a, b)
}
