package app

import (
	"errors"
	"fmt"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// What the schemas cannot check is refused with every problem at its loc;
// what is well formed becomes the query.
func TestConversationParamsAreChecked(t *testing.T) {
	one, five := 1, 5
	var fields apperr.ValidationErrors
	_, err := ConversationParams{
		Evaluations:    []string{"accuracy", "accuracy:maybe", "a:b:success"},
		DataCollection: []string{"nocolon", "city:like:x", "amount:gt:lots", "amount:gte:3", "city:in:a|b", ":eq:x"},
		RatingMin:      &five, RatingMax: &one, Search: "!!! ...", TagIDs: []string{"a.b"},
	}.query("ws")
	if !errors.As(err, &fields) {
		t.Fatalf("err %v", err)
	}
	var locs []string
	for _, f := range fields {
		locs = append(locs, fmt.Sprint(f.Loc))
	}
	want := "[[query rating_min] [query tag_ids 0] [query evaluation_params 0] [query evaluation_params 1] " +
		"[query data_collection_params 0] [query data_collection_params 1] [query data_collection_params 2] [query data_collection_params 5] [query search]]"
	if fmt.Sprint(locs) != want {
		t.Fatalf("locs %v\nwant %s", locs, want)
	}

	q, err := ConversationParams{Evaluations: []string{"a:b:success"}, DataCollection: []string{"amount:gte:3", "city:in:a|b", "note:eq:x:y"},
		Search: "Refund, REFUND denied!"}.query("ws")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(q.Evaluations, q.DataCollection, q.Words) != "[{a:b success}] [{amount gte [3] 3} {city in [a b] 0} {note eq [x:y] 0}] [denied refund]" {
		t.Fatalf("query %+v", q)
	}
}

// A rating range between the two ratings there are (2..4) matches
// nothing: its group is empty.
func TestRatingRangeWithNoRatingIsEmpty(t *testing.T) {
	q := ConversationQuery{RatingMin: 2, RatingMax: 4}
	gs := q.Groups()
	if len(gs) != 1 || len(gs[0]) != 0 {
		t.Fatalf("groups %v", gs)
	}
	if q.Matches(ConversationSummary{Seen: true, Feedback: "like"}) || q.Matches(ConversationSummary{Seen: true, Feedback: "dislike"}) {
		t.Fatal("a like or a dislike matches 2..4")
	}
}
