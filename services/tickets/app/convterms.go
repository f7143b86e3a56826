package app

import (
	"maps"
	"math"
	"slices"
	"strconv"
)

// A conversation's index terms name the sets a listing may walk instead
// of the whole workspace: its agent, outcome, status, each tool called or
// errored, each evaluation result, each collected data value, each search
// word, each tag and its rating. Both read models index them (the memory
// index keeps a newest-first tree per term; the store a multikey index),
// and a query's Groups say which sets hold all its matches.
const (
	TermAll = "*" // every seen conversation
	sep     = "\x1f"
)

// PlatformTerms are c's terms learnt from its platform events.
func PlatformTerms(c ConversationSummary) []string {
	if !c.Seen {
		return nil
	}
	terms := []string{TermAll, "s:" + c.CallSuccessful, "st:" + c.Status}
	if c.AgentID != "" {
		terms = append(terms, "a:"+c.AgentID)
	}
	for _, t := range c.ToolNames {
		terms = append(terms, "t:"+t)
	}
	for _, t := range c.ToolsErrored {
		terms = append(terms, "e:"+t)
	}
	for _, id := range slices.Sorted(maps.Keys(c.Evaluations)) {
		terms = append(terms, "v:"+id+sep+c.Evaluations[id])
	}
	for _, id := range slices.Sorted(maps.Keys(c.DataCollection)) {
		terms = append(terms, CollectedTerm(id), DataTerm(id, c.DataCollection[id]))
	}
	for _, w := range c.Words {
		terms = append(terms, "w:"+w)
	}
	return terms
}

// DataTerm is the term of a data collection value; CollectedTerm, of
// the field being collected at all.
func DataTerm(id, value string) string { return "d:" + id + sep + value }

// CollectedTerm: see DataTerm.
func CollectedTerm(id string) string { return "c:" + id }

// AnnotationTerms are c's terms learnt from its annotations.
func AnnotationTerms(c ConversationSummary) []string {
	var terms []string
	if r := c.Rating(); r != 0 {
		terms = append(terms, "r:"+strconv.Itoa(r))
	}
	for _, id := range c.TagIDs {
		terms = append(terms, "g:"+id)
	}
	return terms
}

// IsAnnotationTerm says which of the two a term is.
func IsAnnotationTerm(term string) bool {
	return len(term) > 2 && (term[:2] == "r:" || term[:2] == "g:")
}

// Groups are sets of terms, one per filter that an index can serve: every
// conversation q matches holds at least one term of each group. A walk of
// one group's trees (merged) tested with Matches answers q; the smallest
// group walks the least. An empty group means nothing can match.
func (q ConversationQuery) Groups() [][]string {
	var gs [][]string
	add := func(terms ...string) { gs = append(gs, terms) }
	prefixed := func(prefix string, values []string) []string {
		out := make([]string, len(values))
		for i, v := range values {
			out[i] = prefix + v
		}
		return out
	}
	if q.AgentID != "" {
		add("a:" + q.AgentID)
	}
	if q.CallSuccessful != "" {
		add("s:" + q.CallSuccessful)
	}
	for _, e := range q.Evaluations {
		add("v:" + e.Criterion + sep + e.Result)
	}
	for _, d := range q.DataCollection {
		switch {
		case (d.Op == "eq" || d.Op == "in") && !slices.Contains(d.Values, ""):
			add(prefixed("d:"+d.ID+sep, d.Values)...) // DataTerm
		case d.Op == "neq" && d.Values[0] == "", d.Op != "eq" && d.Op != "in" && d.Op != "neq":
			add(CollectedTerm(d.ID))
		}
	}
	if len(q.ToolNames) > 0 {
		add(prefixed("t:", q.ToolNames)...)
	}
	if len(q.ToolsErrored) > 0 {
		add(prefixed("e:", q.ToolsErrored)...)
	}
	if len(q.TagIDs) > 0 {
		add(prefixed("g:", q.TagIDs)...)
	}
	for _, w := range q.Words {
		add("w:" + w)
	}
	if len(q.ExcludeStatus) > 0 {
		var keep []string
		for _, s := range []string{ConversationInProgress, ConversationDone} {
			if !slices.Contains(q.ExcludeStatus, s) {
				keep = append(keep, "st:"+s)
			}
		}
		add(keep...)
	}
	if q.RatingMin != 0 || q.RatingMax != 0 {
		var keep []string
		for _, r := range []int{1, 5} {
			if (q.RatingMin == 0 || r >= q.RatingMin) && (q.RatingMax == 0 || r <= q.RatingMax) {
				keep = append(keep, "r:"+strconv.Itoa(r))
			}
		}
		add(keep...)
	}
	return gs
}

// A Range is a numeric filter an index ordered by value can serve: the
// conversations whose value of Key lies in [Lo, Hi] hold every match
// (Matches decides the strict bounds).
type Range struct {
	Key    string
	Lo, Hi float64
}

// RangeKeyDuration is the key of the call duration; DataRangeKey, of a
// numeric data collection value.
const RangeKeyDuration = "dur"

// DataRangeKey: see RangeKeyDuration.
func DataRangeKey(id string) string { return "num:" + id }

// RangeValues are c's values under every range key.
func RangeValues(c ConversationSummary) map[string]float64 {
	if !c.Seen {
		return nil
	}
	out := map[string]float64{RangeKeyDuration: float64(c.DurationSecs)}
	for id, n := range c.DataNumbers {
		out[DataRangeKey(id)] = n
	}
	return out
}

// Ranges are q's numeric filters as ranges.
func (q ConversationQuery) Ranges() []Range {
	var out []Range
	if q.DurationMin != nil || q.DurationMax != nil {
		r := Range{Key: RangeKeyDuration, Lo: math.Inf(-1), Hi: math.Inf(1)}
		if q.DurationMin != nil {
			r.Lo = float64(*q.DurationMin)
		}
		if q.DurationMax != nil {
			r.Hi = float64(*q.DurationMax)
		}
		out = append(out, r)
	}
	for _, d := range q.DataCollection {
		r := Range{Key: DataRangeKey(d.ID), Lo: math.Inf(-1), Hi: math.Inf(1)}
		switch d.Op {
		case "gt", "gte":
			r.Lo = d.Number
		case "lt", "lte":
			r.Hi = d.Number
		default:
			continue
		}
		out = append(out, r)
	}
	return out
}
