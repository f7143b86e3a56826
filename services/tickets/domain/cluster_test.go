package domain

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/textsim"
)

func TestClusterMergesExactDuplicatesAndGroupsSimilarTickets(t *testing.T) {
	items := []ClusterItem{
		{ID: "t3", CreatedAtMs: 3, Headline: "caller insisted on a HUMAN!", Text: "caller insisted on a HUMAN!"},
		{ID: "t1", CreatedAtMs: 1, Headline: "Caller insisted on a human.", Text: "Caller insisted on a human."},
		{ID: "t2", CreatedAtMs: 2, Headline: "Wrong date for the table booking", Text: "Wrong date for the table booking, allergy menu missing"},
		{ID: "t4", CreatedAtMs: 4, Headline: "Table booking got the wrong date", Text: "Table booking got the wrong date; allergy menu missing"},
		{ID: "t5", CreatedAtMs: 5, Headline: "Refund policy unknown", Text: "Refund policy unknown"},
	}
	plan := Cluster(items)
	if want := map[string]string{"t3": "t1"}; !reflect.DeepEqual(plan.Duplicates, want) {
		t.Fatalf("duplicates %v, want %v", plan.Duplicates, want)
	}
	if want := [][]string{{"t2", "t4"}}; !reflect.DeepEqual(plan.Groups, want) {
		t.Fatalf("groups %v, want %v", plan.Groups, want)
	}
	// The same tickets in another order plan the same.
	reversed := []ClusterItem{items[4], items[3], items[2], items[1], items[0]}
	if again := Cluster(reversed); !reflect.DeepEqual(again, plan) {
		t.Fatalf("order-dependent: %v vs %v", again, plan)
	}
}

func TestClusterLinksTransitivelyToTheOldest(t *testing.T) {
	plan := Cluster([]ClusterItem{
		{ID: "c", CreatedAtMs: 3, Headline: "c", Text: "charlie delta echo foxtrot"},
		{ID: "a", CreatedAtMs: 1, Headline: "a", Text: "alpha bravo charlie delta"},
		{ID: "b", CreatedAtMs: 2, Headline: "b", Text: "bravo charlie delta echo"},
	})
	if want := [][]string{{"a", "b", "c"}}; !reflect.DeepEqual(plan.Groups, want) {
		t.Fatalf("groups %v, want %v (a~b, b~c)", plan.Groups, want)
	}
}

func TestClassifyIssueOnlyWhenClear(t *testing.T) {
	for text, want := range map[string]string{
		"Offline judge: the agent's configuration does not cover gift vouchers": "knowledge_gap",
		"The agent gave incorrect opening hours":                                "incorrect_information",
		"The tool call failed with a timeout":                                   "tool_issue",
		"Caller insisted on a human":                                            "",
		"The agent does not know, and the tool failed with a tool error":        "", // two rules: not clear
	} {
		got, _, ok := ClassifyIssue(text)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", text, got, ok, want)
		}
	}
}

func TestClusterLabelFitsALabel(t *testing.T) {
	long := "tkt_0123456789012345678901234567890123456789012345678901234567890123456789"
	if l := ClusterLabel(long); len(l) > MaxLabelLen || l[:len(ClusterLabelPrefix)] != ClusterLabelPrefix {
		t.Fatalf("label %q (%d bytes)", l, len(l))
	}
	if l := ClusterLabel("tkt_abc"); l != "cluster-tkt_abc" {
		t.Fatalf("label %q", l)
	}
}

// The inverted index finds exactly the groups comparing every pair does.
func TestSimilarGroupsEqualsComparingEveryPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocabulary := strings.Fields("refund receipt booking table date allergy menu voucher price card " +
		"transfer human escalate delay weather flight hotel password reset account locked invoice")
	for round := range 200 {
		items := make([]ClusterItem, 2+rng.IntN(30))
		for i := range items {
			var text []string
			for range 1 + rng.IntN(6) {
				text = append(text, vocabulary[rng.IntN(len(vocabulary))])
			}
			items[i] = ClusterItem{ID: fmt.Sprint("t", i), CreatedAtMs: int64(i), Text: strings.Join(text, " ")}
		}
		if got, want := similarGroups(items), everyPairGroups(items); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: groups %v, comparing every pair gives %v", round, got, want)
		}
	}
}

// everyPairGroups is the plain definition similarGroups must match.
func everyPairGroups(items []ClusterItem) [][]string {
	words := make([]map[string]bool, len(items))
	df := map[string]int{}
	for i, it := range items {
		words[i] = ContentWords(it.Text)
		for w := range words[i] {
			df[w]++
		}
	}
	if len(items) >= 4 {
		for _, s := range words {
			for w := range s {
				if 2*df[w] > len(items) {
					delete(s, w)
				}
			}
		}
	}
	group := make([]int, len(items)) // item → the oldest item of its group
	for i := range group {
		group[i] = i
	}
	for i := range items {
		for j := range i {
			if textsim.Jaccard(words[i], words[j]) >= SimilarityThreshold && group[i] != group[j] {
				from, to := max(group[i], group[j]), min(group[i], group[j])
				for k := range group {
					if group[k] == from {
						group[k] = to
					}
				}
			}
		}
	}
	var out [][]string
	at := map[int]int{}
	for i, it := range items {
		g, ok := at[group[i]]
		if !ok {
			g = len(out)
			at[group[i]] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], it.ID)
	}
	return out
}

func BenchmarkCluster2000(b *testing.B) {
	items := make([]ClusterItem, 2000)
	for i := range items {
		text := fmt.Sprintf("Test \"vouchers %d\" fails: the agent did not explain how to buy a gift voucher nor its price (run run_%d)", i, i)
		items[i] = ClusterItem{ID: fmt.Sprint("t", i), CreatedAtMs: int64(i), Headline: text, Text: text}
	}
	for b.Loop() {
		Cluster(items)
	}
}

// A ticket a model judged leaves the group the rules gave it and joins
// the groups of the tickets it names; the others keep theirs.
func TestRelinkFollowsTheModel(t *testing.T) {
	items := []ClusterItem{{ID: "a", CreatedAtMs: 1}, {ID: "b", CreatedAtMs: 2}, {ID: "c", CreatedAtMs: 3}, {ID: "d", CreatedAtMs: 4}, {ID: "e", CreatedAtMs: 5}}
	rules := [][]string{{"a", "b", "e"}, {"c", "d"}}
	cases := []struct {
		links map[string][]string
		want  [][]string
	}{
		{nil, [][]string{{"a", "b", "e"}, {"c", "d"}}},
		{map[string][]string{"e": {"d"}}, [][]string{{"a", "b"}, {"c", "d", "e"}}},
		{map[string][]string{"e": {}}, [][]string{{"a", "b"}, {"c", "d"}}},
		{map[string][]string{"e": {"a", "c", "unknown", "e"}}, [][]string{{"a", "b", "c", "d", "e"}}},
		{map[string][]string{"b": {}, "e": {}}, [][]string{{"c", "d"}}},
	}
	for _, c := range cases {
		if got := Relink(items, rules, c.links); !reflect.DeepEqual(got, c.want) {
			t.Errorf("links %v: groups %v, want %v", c.links, got, c.want)
		}
	}
}

// A model is shown the most alike tickets first, then the newest.
func TestCandidatesRankByLikeness(t *testing.T) {
	items := []ClusterItem{
		{ID: "me", CreatedAtMs: 9, Text: "refund cancelled booking"},
		{ID: "old", CreatedAtMs: 1, Text: "parking"},
		{ID: "new", CreatedAtMs: 8, Text: "weather"},
		{ID: "close", CreatedAtMs: 2, Text: "refund cancelled booking please"},
		{ID: "near", CreatedAtMs: 3, Text: "refund policy"},
	}
	var ids []string
	for _, c := range Candidates(items, items[0], 3) {
		ids = append(ids, c.ID)
	}
	if want := []string{"close", "near", "new"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("candidates %v, want %v", ids, want)
	}
}

// Two exact duplicates created in the same millisecond, one already
// clustered (its pass ran before the other was seen): the settled one is
// the elder whatever the ids, so the other merges into it.
func TestClusterSameMillisecondDuplicatesMergeIntoTheSettledOne(t *testing.T) {
	for _, settledID := range []string{"tkt_a", "tkt_z"} {
		other := "tkt_z"
		if settledID == "tkt_z" {
			other = "tkt_a"
		}
		plan := Cluster([]ClusterItem{
			{ID: other, CreatedAtMs: 5, Headline: "Caller insisted on a human"},
			{ID: settledID, CreatedAtMs: 5, Headline: "Caller insisted on a human", Settled: true},
		})
		if len(plan.Duplicates) != 1 || plan.Duplicates[other] != settledID {
			t.Fatalf("settled %s: duplicates %v, want %s merged into it", settledID, plan.Duplicates, other)
		}
	}
}
