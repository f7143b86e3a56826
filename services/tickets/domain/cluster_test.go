package domain

import (
	"reflect"
	"testing"
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
