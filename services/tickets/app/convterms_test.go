package app_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// summaries are the listing tests' conversations as the read models fold
// them (conv_1 liked and tagged ctag_x, conv_2 disliked), and one known
// only by its annotations.
func summaries() []app.ConversationSummary {
	byID := map[string]app.ConversationSummary{}
	for _, c := range append(slices.Clone(calls), conv1) {
		for _, ev := range c.events() {
			byID[c.id] = byID[c.id].Applied(ev)
		}
	}
	byID["conv_1"] = byID["conv_1"].Annotated(annotations("ws_a", "conv_1", "like", "ctag_x"))
	byID["conv_2"] = byID["conv_2"].Annotated(annotations("ws_a", "conv_2", "dislike"))
	byID["conv_early"] = app.ConversationSummary{}.Annotated(annotations("ws_a", "conv_early", "like", "ctag_x"))
	return slices.Collect(maps.Values(byID))
}

// An index walks one group's terms, or one range of values, instead of
// the workspace: so every conversation a query matches holds a term of
// each of its groups and lies in each of its ranges, while the groups
// and ranges leave some conversation out. A conversation's terms are
// annotation terms exactly when they come from its annotations, and a
// summary read back from a store ranges as the one folded.
func TestIndexTermsHoldEveryMatch(t *testing.T) {
	cs := summaries()
	i64 := func(n int64) *int64 { return &n }
	for _, q := range []app.ConversationQuery{
		{AgentID: "agent_1"},
		{CallSuccessful: "failure"},
		{Evaluations: []app.EvaluationCond{{Criterion: "polite", Result: "success"}}},
		{DataCollection: []app.DataCond{{ID: "city", Op: "eq", Values: []string{"Paris"}}}},
		{DataCollection: []app.DataCond{{ID: "amount", Op: "in", Values: []string{"12", "40"}}}},
		{DataCollection: []app.DataCond{{ID: "city", Op: "neq", Values: []string{""}}}},
		{AgentID: "agent_2", DataCollection: []app.DataCond{{ID: "city", Op: "neq", Values: []string{"Paris"}}}},
		{DataCollection: []app.DataCond{{ID: "amount", Op: "gt", Number: 20}}},
		{DataCollection: []app.DataCond{{ID: "amount", Op: "lte", Number: 12}}},
		{ToolNames: []string{"refund", "lookup"}},
		{ToolsErrored: []string{"refund"}},
		{TagIDs: []string{"ctag_y", "ctag_x"}},
		{Words: app.SearchWords("refund sorry")},
		{ExcludeStatus: []string{app.ConversationInProgress}},
		{RatingMin: 5},
		{RatingMax: 1},
		{DurationMin: i64(100)},
		{DurationMin: i64(1), DurationMax: i64(45)},
	} {
		q.WorkspaceID = "ws_a"
		groups, ranges := q.Groups(), q.Ranges()
		matched, narrowed := 0, false
		for _, c := range cs {
			terms := append(app.PlatformTerms(c), app.AnnotationTerms(c)...)
			values := app.RangeValues(c)
			inGroups := !slices.ContainsFunc(groups, func(g []string) bool {
				return !slices.ContainsFunc(g, func(term string) bool { return slices.Contains(terms, term) })
			})
			inRanges := !slices.ContainsFunc(ranges, func(r app.Range) bool {
				v, ok := values[r.Key]
				return !ok || v < r.Lo || v > r.Hi
			})
			if q.Matches(c) {
				matched++
				if !inGroups || !inRanges {
					t.Errorf("%+v matches %s, whose terms %v or values %v its groups %v or ranges %v leave out", q, c.ConversationID, terms, values, groups, ranges)
				}
			}
			narrowed = narrowed || !inGroups || !inRanges
		}
		if matched == 0 || !narrowed {
			t.Errorf("%+v matches %d conversations; its groups %v and ranges %v narrow nothing: %v", q, matched, groups, ranges, !narrowed)
		}
	}
	for _, c := range cs {
		if slices.ContainsFunc(app.PlatformTerms(c), app.IsAnnotationTerm) || slices.ContainsFunc(app.AnnotationTerms(c), func(term string) bool { return !app.IsAnnotationTerm(term) }) {
			t.Errorf("%s: platform terms %v, annotation terms %v", c.ConversationID, app.PlatformTerms(c), app.AnnotationTerms(c))
		}
		stored := c
		stored.DataNumbers = nil
		if !maps.Equal(app.RangeValues(stored.WithDataNumbers()), app.RangeValues(c)) {
			t.Errorf("%s read back ranges %v, folded %v", c.ConversationID, app.RangeValues(stored.WithDataNumbers()), app.RangeValues(c))
		}
	}
}
