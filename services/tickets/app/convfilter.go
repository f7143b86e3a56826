package app

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// ConversationParams are a conversations listing's query parameters, as
// the edge decoded and checked them against the operation's schemas
// (ranges, enums, the shape of evaluation_params); query checks the rest.
type ConversationParams struct {
	PageSize       int      `json:"page_size"`
	AgentID        string   `json:"agent_id"`
	CallSuccessful string   `json:"call_successful"`
	StartedBefore  int64    `json:"call_start_before_unix"`
	StartedAfter   int64    `json:"call_start_after_unix"`
	DurationMin    *int64   `json:"call_duration_min_secs"`
	DurationMax    *int64   `json:"call_duration_max_secs"`
	RatingMin      *int     `json:"rating_min"`
	RatingMax      *int     `json:"rating_max"`
	Evaluations    []string `json:"evaluation_params"`
	DataCollection []string `json:"data_collection_params"`
	ToolNames      []string `json:"tool_names"`
	ToolsErrored   []string `json:"tool_names_errored"`
	TagIDs         []string `json:"tag_ids"`
	ExcludeStatus  []string `json:"exclude_statuses"`
	Search         string   `json:"search"`
	SummaryMode    string   `json:"summary_mode"`
	Cursor         string   `json:"cursor"`
}

// scope is what a cursor is bound to: every filter, so a cursor is
// refused under other filters.
func (p ConversationParams) scope() string {
	num := func(n *int64) string {
		if n == nil {
			return "-"
		}
		return strconv.FormatInt(*n, 10)
	}
	small := func(n *int) string {
		if n == nil {
			return "-"
		}
		return strconv.Itoa(*n)
	}
	parts := []string{p.AgentID, p.CallSuccessful, strconv.FormatInt(p.StartedBefore, 10), strconv.FormatInt(p.StartedAfter, 10),
		num(p.DurationMin), num(p.DurationMax), small(p.RatingMin), small(p.RatingMax), p.Search}
	for _, list := range [][]string{p.Evaluations, p.DataCollection, p.ToolNames, p.ToolsErrored, p.TagIDs, p.ExcludeStatus} {
		parts = append(parts, strings.Join(list, "\x1f"))
	}
	return strings.Join(parts, "\x1e")
}

// ConversationQuery is one page of a conversations listing: newest first,
// strictly after After, every filter set holding (AND); a list of names
// (ToolNames, ToolsErrored, TagIDs) matches a conversation holding any of
// them.
type ConversationQuery struct {
	WorkspaceID    string
	AgentID        string
	CallSuccessful string
	StartedBefore  int64 // unix seconds, exclusive; 0 = no bound
	StartedAfter   int64 // unix seconds, exclusive; 0 = no bound
	DurationMin    *int64
	DurationMax    *int64
	RatingMin      int // 0 = no bound
	RatingMax      int // 0 = no bound
	Evaluations    []EvaluationCond
	DataCollection []DataCond
	ToolNames      []string
	ToolsErrored   []string
	TagIDs         []string
	ExcludeStatus  []string
	Words          []string // every word must be in the transcript
	After          *ConversationPosition
	Limit          int
}

// EvaluationCond is one evaluation_params: criterion_id:result.
type EvaluationCond struct{ Criterion, Result string }

// Data collection operators (data_collection_params id:op:value), as the
// SDK documents them.
var DataOps = []string{"eq", "neq", "gt", "gte", "lt", "lte", "in"}

// DataCond is one data_collection_params: id:op:value. eq is exact
// equality of the value's text, and eq with an empty value matches a
// field not collected; neq is its negation (so neq with an empty value
// matches a collected field); in is eq against any of the pipe-separated
// values; gt, gte, lt and lte compare numbers (a field whose value is not
// a number never matches them).
type DataCond struct {
	ID, Op string
	Values []string // eq, neq: one; in: several
	Number float64  // gt, gte, lt, lte
}

// Matches reports whether c's data collection results meet d.
func (d DataCond) Matches(c ConversationSummary) bool {
	v, collected := c.DataCollection[d.ID]
	switch d.Op {
	case "eq", "in":
		return slices.ContainsFunc(d.Values, func(want string) bool { return want == "" && !collected || collected && want == v })
	case "neq":
		return !(DataCond{ID: d.ID, Op: "eq", Values: d.Values}).Matches(c)
	}
	n, numeric := c.DataNumbers[d.ID]
	if !numeric {
		return false
	}
	switch d.Op {
	case "gt":
		return n > d.Number
	case "gte":
		return n >= d.Number
	case "lt":
		return n < d.Number
	default:
		return n <= d.Number
	}
}

// dataNumbers are the values of dc that are numbers (NaN is none), which
// gt, gte, lt and lte compare: parsed once, not at every listing.
func dataNumbers(dc map[string]string) map[string]float64 {
	var out map[string]float64
	for k, v := range dc {
		if n, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(n) {
			if out == nil {
				out = map[string]float64{}
			}
			out[k] = n
		}
	}
	return out
}

// Matches is the meaning of the filters; every read model implements
// exactly this (the conformance suite checks it against this function).
func (q ConversationQuery) Matches(c ConversationSummary) bool {
	rating := c.Rating()
	switch {
	case !c.Seen,
		q.AgentID != "" && c.AgentID != q.AgentID,
		q.CallSuccessful != "" && c.CallSuccessful != q.CallSuccessful,
		q.StartedBefore != 0 && c.StartedAtMs >= q.StartedBefore*1000,
		q.StartedAfter != 0 && c.StartedAtMs <= q.StartedAfter*1000+999,
		q.DurationMin != nil && c.DurationSecs < *q.DurationMin,
		q.DurationMax != nil && c.DurationSecs > *q.DurationMax,
		q.RatingMin != 0 && (rating == 0 || rating < q.RatingMin),
		q.RatingMax != 0 && (rating == 0 || rating > q.RatingMax),
		len(q.ToolNames) > 0 && !anyOf(q.ToolNames, c.ToolNames),
		len(q.ToolsErrored) > 0 && !anyOf(q.ToolsErrored, c.ToolsErrored),
		len(q.TagIDs) > 0 && !anyOf(q.TagIDs, c.TagIDs),
		slices.Contains(q.ExcludeStatus, c.Status):
		return false
	}
	for _, e := range q.Evaluations {
		if c.Evaluations[e.Criterion] != e.Result {
			return false
		}
	}
	for _, d := range q.DataCollection {
		if !d.Matches(c) {
			return false
		}
	}
	for _, w := range q.Words {
		if _, found := slices.BinarySearch(c.Words, w); !found {
			return false
		}
	}
	return true
}

func anyOf(want, have []string) bool {
	return slices.ContainsFunc(want, func(w string) bool { return slices.Contains(have, w) })
}

// Bounds of a listing's filters.
const (
	maxFilterValues = 50 // repeated values of one parameter (as the SDK's own bound)
	maxSearchWords  = 8
	maxNameLen      = 256
)

// query checks what the schemas cannot and builds the query. Every
// problem is reported at once, each at its loc, as a 422.
func (p ConversationParams) query(workspaceID string) (ConversationQuery, error) {
	q := ConversationQuery{WorkspaceID: workspaceID, AgentID: p.AgentID, CallSuccessful: p.CallSuccessful, Limit: 30,
		StartedBefore: p.StartedBefore, StartedAfter: p.StartedAfter, DurationMin: p.DurationMin, DurationMax: p.DurationMax,
		ToolNames: p.ToolNames, ToolsErrored: p.ToolsErrored, TagIDs: p.TagIDs, ExcludeStatus: p.ExcludeStatus}
	if p.PageSize > 0 {
		q.Limit = p.PageSize
	}
	if p.RatingMin != nil {
		q.RatingMin = *p.RatingMin
	}
	if p.RatingMax != nil {
		q.RatingMax = *p.RatingMax
	}
	var v apperr.Validator
	if p.DurationMin != nil && p.DurationMax != nil {
		v.Check(*p.DurationMin <= *p.DurationMax, "call_duration_min_secs is above call_duration_max_secs", "value_error", "query", "call_duration_min_secs")
	}
	if q.RatingMin != 0 && q.RatingMax != 0 {
		v.Check(q.RatingMin <= q.RatingMax, "rating_min is above rating_max", "value_error", "query", "rating_min")
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"evaluation_params", p.Evaluations}, {"data_collection_params", p.DataCollection},
		{"tool_names", p.ToolNames}, {"tool_names_errored", p.ToolsErrored}, {"tag_ids", p.TagIDs}} {
		v.Check(len(l.list) <= maxFilterValues, "at most 50 values", "value_error", "query", l.name)
		for i, s := range l.list {
			v.Check(s != "" && len(s) <= maxNameLen, "must be 1 to 256 characters", "value_error", "query", l.name, i)
		}
	}
	for i, id := range p.TagIDs {
		v.ID(id, "query", "tag_ids", i)
	}
	for i, s := range p.Evaluations {
		criterion, result, ok := cutLast(s, ":")
		if !ok || criterion == "" || !slices.Contains(CallOutcomes, result) {
			v.Add("must be criterion_id:result, the result one of success, failure, unknown", "value_error", "query", "evaluation_params", i)
			continue
		}
		q.Evaluations = append(q.Evaluations, EvaluationCond{Criterion: criterion, Result: result})
	}
	for i, s := range p.DataCollection {
		d, msg := parseDataCond(s)
		if msg != "" {
			v.Add(msg, "value_error", "query", "data_collection_params", i)
			continue
		}
		q.DataCollection = append(q.DataCollection, d)
	}
	if strings.TrimSpace(p.Search) != "" {
		q.Words = SearchWords(p.Search)
		v.Check(len(q.Words) > 0, "search must hold a word (letters or digits)", "value_error", "query", "search")
		v.Check(len(q.Words) <= maxSearchWords, "search holds at most 8 distinct words", "value_error", "query", "search")
	}
	return q, v.Err()
}

// parseDataCond reads id:op:value; msg says what is wrong, else "".
func parseDataCond(s string) (d DataCond, msg string) {
	const form = "must be id:op:value, op one of eq, neq, gt, gte, lt, lte, in"
	id, rest, ok := strings.Cut(s, ":")
	if !ok || id == "" {
		return d, form
	}
	op, value, ok := strings.Cut(rest, ":")
	if !ok || !slices.Contains(DataOps, op) {
		return d, form
	}
	d = DataCond{ID: id, Op: op, Values: []string{value}}
	switch op {
	case "in":
		d.Values = strings.Split(value, "|")
	case "gt", "gte", "lt", "lte":
		n, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(n) { // NaN compares with nothing
			return d, op + " needs a numeric value"
		}
		d.Number = n
	}
	return d, ""
}

// cutLast splits s around the last sep (criterion ids may hold ':').
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// maxWordLen drops what cannot be a word a person searches for (a
// base64 blob, a long URL) from the index.
const maxWordLen = 40

// SearchWords is what search matches: the distinct words of a text, each
// a run of letters or digits, lower-cased, 1 to 40 characters, sorted. A
// search matches a conversation whose transcript messages hold every word
// of the search (whole words, in any order and any turn).
func SearchWords(text string) []string {
	var w Words
	w.Add(text)
	return w.Sorted()
}
