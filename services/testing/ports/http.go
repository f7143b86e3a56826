// Package ports serves agent tests, folders and invocations over HTTP
// (through the gateway) in the public wire shapes.
package ports

import (
	"context"
	"io"
	"strconv"
	"strings"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Handlers serve the testing operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

func (h *Handlers) CreateTest(c *api.Call) (any, error) {
	return createTest(c, h.App.CreateTest)
}

// createTest answers 201 {"id"} with the test create makes of the
// request's body.
func createTest(c *api.Call, create func(context.Context, principal.Caller, []byte) (*testingv1.Test, error)) (any, error) {
	body, err := c.RawBody()
	if err != nil {
		return nil, err
	}
	t, err := create(c.Context(), c.Caller(), body)
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": t.GetTestId()}, nil
}

// getTest answers the test's definition and its reliability over its
// recent invocations (pass rate, Wilson 95% interval, pass^k with k from
// ?k=, default 3, and the agent's latency: turn and first token p50, p95
// and max), over them all and per invocation.
func (h *Handlers) GetTest(c *api.Call) (any, error) {
	ws := c.Caller().WorkspaceID
	var q struct {
		K int `json:"k"` // the edge checked it against the parameter's 1..10
	}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	k := app.ReliabilityK
	if q.K > 0 {
		k = q.K
	}
	t, _, err := h.App.Tests.Get(c.Context(), ws, c.ID())
	if err != nil {
		return nil, err
	}
	overall, per, err := h.App.TestReliability(c.Context(), ws, t.GetTestId(), k)
	if err != nil {
		return nil, err
	}
	rel := wire.TestReliability{Reliability: ReliabilityView(overall), Invocations: make([]wire.InvocationReliability, len(per))}
	var turnMs, firstTokenMs []int64
	for i, p := range per {
		rel.Invocations[i] = wire.InvocationReliability{Reliability: ReliabilityView(p.Reliability),
			InvocationID: p.InvocationID, AgentID: p.AgentID, CreatedAtUnix: p.CreatedAtUnix, AgentLatency: latencyOf(p.TurnMs, p.FirstTokenMs)}
		turnMs, firstTokenMs = append(turnMs, p.TurnMs...), append(firstTokenMs, p.FirstTokenMs...)
	}
	rel.AgentLatency = latencyOf(turnMs, firstTokenMs)
	view := TestView(t)
	view["reliability"] = rel
	markDeletedConversation(view, ws, h.App.ConversationDeleted)
	return view, nil
}

func (h *Handlers) UpdateTest(c *api.Call) (any, error) {
	body, err := c.RawBody()
	if err != nil {
		return nil, err
	}
	t, err := h.App.UpdateTest(c.Context(), c.Caller(), c.ID(), body)
	return api.View(t, err, TestView)
}

func (h *Handlers) DeleteTest(c *api.Call) (any, error) {
	if err := h.App.DeleteTest(c.Context(), c.Caller(), c.ID()); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// testsQuery is GET /v1/convai/agent-testing's query, as its operation
// documents and the edge has checked it.
type testsQuery struct {
	PageSize       int      `json:"page_size"`
	Cursor         string   `json:"cursor"`
	Search         string   `json:"search"`
	ParentFolderID *string  `json:"parent_folder_id"`
	SortMode       string   `json:"sort_mode"`
	SharingMode    string   `json:"sharing_mode"`
	CreatedBy      string   `json:"created_by_user_id"`
	IncludeFolders bool     `json:"include_folders"`
	Types          []string `json:"types"`
}

func (h *Handlers) ListTests(c *api.Call) (any, error) {
	p := c.Caller().Principal
	params := testsQuery{PageSize: 30}
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	if params.ParentFolderID == nil && c.HasQuery("parent_folder_id") {
		root := "" // an empty value, the root, is one DecodeQuery leaves out
		params.ParentFolderID = &root
	}
	tq := app.TestQuery{WorkspaceID: p.WorkspaceID, Search: params.Search, Types: params.Types, Limit: params.PageSize,
		IncludeFolder: params.IncludeFolders, FoldersFirst: params.SortMode == "folders_first", ParentFolder: params.ParentFolderID}
	switch by := params.CreatedBy; by {
	case "":
	case "@me":
		tq.CreatedBy = p.UserID
	default:
		tq.CreatedBy = by
	}
	if params.SharingMode == "shared_with_me" { // a workspace shares every entry with all of it
		tq.NotCreatedBy = p.UserID
	}
	page, err := h.App.PageTests(c.Context(), tq, params.Cursor)
	if err != nil {
		return nil, err
	}
	return pageView("tests", page, entryView), nil
}

// pageView is one page of a listing, its rows under key, each as view
// shows it.
func pageView[T, V any](key string, page app.Page[T], view func(T) V) map[string]any {
	return map[string]any{key: mapEach(page.Rows, view), "has_more": page.HasMore, "next_cursor": page.NextCursor}
}

func mapEach[T, V any](xs []T, f func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func (h *Handlers) Summaries(c *api.Call) (any, error) {
	var in struct {
		TestIDs []string `json:"test_ids"`
	}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	listed, err := h.App.Summaries(c.Context(), c.Caller().WorkspaceID, in.TestIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]wire.TestEntry, len(listed))
	for id, e := range listed {
		out[id] = entryView(e)
	}
	return map[string]any{"tests": out}, nil
}

func (h *Handlers) BulkMove(c *api.Call) (any, error) {
	var in struct {
		EntityIDs []string `json:"entity_ids"`
		MoveTo    *string  `json:"move_to"`
	}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	moveTo := ""
	if in.MoveTo != nil {
		moveTo = *in.MoveTo
	}
	n, err := h.App.BulkMove(c.Context(), c.Caller(), in.EntityIDs, moveTo)
	if err != nil {
		return nil, err
	}
	return map[string]any{"moved_count": n, "move_to": nullable(moveTo)}, nil
}

func nullable(s string) *string {
	if s == "" || s == "root" {
		return nil
	}
	return &s
}

// folderInput is a folder create or rename body; the schema (FolderInput)
// requires the name and bounds it.
type folderInput struct {
	Name           string  `json:"name"`
	ParentFolderID *string `json:"parent_folder_id"`
}

func (h *Handlers) CreateFolder(c *api.Call) (any, error) {
	var in folderInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	parent := ""
	if in.ParentFolderID != nil {
		parent = *in.ParentFolderID
	}
	f, err := h.App.CreateFolder(c.Context(), c.Caller(), strings.TrimSpace(in.Name), parent)
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": f.GetFolderId(), "name": f.GetName()}, nil
}

func (h *Handlers) folder(ctx context.Context, ws string, f *testingv1.Folder) (any, error) {
	d, err := h.App.FolderDetails(ctx, ws, f)
	return api.View(d, err, folderView)
}

func (h *Handlers) GetFolder(c *api.Call) (any, error) {
	ws := c.Caller().WorkspaceID
	f, _, err := h.App.Folders.Get(c.Context(), ws, c.ID())
	if err != nil {
		return nil, err
	}
	return h.folder(c.Context(), ws, f)
}

func (h *Handlers) RenameFolder(c *api.Call) (any, error) {
	var in folderInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	f, err := h.App.RenameFolder(c.Context(), c.Caller(), c.ID(), strings.TrimSpace(in.Name))
	if err != nil {
		return nil, err
	}
	return h.folder(c.Context(), c.Caller().WorkspaceID, f)
}

func (h *Handlers) DeleteFolder(c *api.Call) (any, error) {
	var q struct {
		Force bool `json:"force"`
	}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	return nil, h.App.DeleteFolder(c.Context(), c.Caller(), c.ID(), q.Force)
}

func (h *Handlers) RunTests(c *api.Call) (any, error) {
	var in app.RunTestsInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	inv, err := h.App.RunTests(c.Context(), c.Caller(), c.ID(), in)
	if err != nil {
		return nil, err
	}
	return h.invocation(c.Context(), inv, true), nil
}

// invocation answers inv as JSON, streamed: an invocation of thousands
// of runs is never held in memory whole.
func (h *Handlers) invocation(ctx context.Context, inv *testingv1.Invocation, created bool) any {
	return api.Stream("application/json", func(w io.Writer) error { return writeInvocation(ctx, h.App, w, inv, created) })
}

// Invocation formats.
const (
	formatJSON  = "json"
	formatJUnit = "junit"
)

// invocationFormat is the format a GET of an invocation answers in: the
// format query parameter (json or junit) when given, else JUnit XML when
// Accept prefers application/xml or text/xml to application/json, else
// JSON.
func invocationFormat(accept []string, format string) string {
	if format != "" {
		return format // json or junit: the edge checked it
	}
	if prefersXML(accept) {
		return formatJUnit
	}
	return formatJSON
}

// prefersXML reports whether Accept names application/xml or text/xml
// with a higher quality than it gives application/json. JSON takes the
// quality of the most specific range matching it (RFC 9110 12.5.1:
// application/json before application/* before */*), so
// "text/xml;q=0.1, */*" chooses JSON; XML only that of a range naming it:
// a wildcard chooses JSON, the default.
func prefersXML(accept []string) bool {
	ranges := acceptRanges(accept)
	xmlQ := max(quality(ranges, "application", "xml", false), quality(ranges, "text", "xml", false))
	return xmlQ > 0 && xmlQ > quality(ranges, "application", "json", true)
}

// acceptRange is one media range of an Accept header with its quality.
type acceptRange struct {
	typ, sub string
	q        float64
}

func acceptRanges(accept []string) []acceptRange {
	var out []acceptRange
	for _, line := range accept {
		for _, rng := range strings.Split(line, ",") {
			params := strings.Split(rng, ";")
			typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(params[0])), "/")
			if !ok {
				continue
			}
			q := 1.0
			for _, p := range params[1:] {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && f >= 0 && f <= 1 {
						q = f
					}
				}
			}
			out = append(out, acceptRange{typ: strings.TrimSpace(typ), sub: strings.TrimSpace(sub), q: q})
		}
	}
	return out
}

// quality is the quality Accept gives typ/sub: that of the most specific
// range matching it (with wildcards, or only one naming it), 0 when none
// does.
func quality(ranges []acceptRange, typ, sub string, wildcards bool) float64 {
	best, q := -1, 0.0
	for _, r := range ranges {
		specificity := -1
		switch {
		case r.typ == typ && r.sub == sub:
			specificity = 2
		case wildcards && r.typ == typ && r.sub == "*":
			specificity = 1
		case wildcards && r.typ == "*" && r.sub == "*":
			specificity = 0
		}
		if specificity > best || (specificity == best && specificity >= 0 && r.q > q) {
			best, q = specificity, r.q
		}
	}
	return q
}

func (h *Handlers) GetInvocation(c *api.Call) (any, error) {
	ws, ctx := c.Caller().WorkspaceID, c.Context()
	var q struct {
		Format   string `json:"format"`
		Baseline string `json:"baseline_invocation_id"`
	}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	format := invocationFormat(c.Header("Accept"), q.Format)
	// An invocation older than the run retention answers that its runs
	// were deleted, rather than every run pending.
	inv, err := h.App.Invocation(ctx, ws, c.ID())
	if err != nil {
		return nil, err
	}
	// A baseline of another workspace, unknown or malformed is answered as
	// an unknown invocation.
	var baseline *testingv1.Invocation
	if q.Baseline != "" {
		if baseline, err = h.App.Invocation(ctx, ws, q.Baseline); err != nil {
			return nil, err
		}
	}
	switch {
	case format == formatJUnit:
		return api.Stream("application/xml; charset=utf-8", func(w io.Writer) error {
			return writeInvocationJUnit(ctx, h.App, w, inv, baseline)
		}), nil
	case baseline != nil:
		return api.Stream("application/json", func(w io.Writer) error {
			return writeInvocationCompared(ctx, h.App, w, inv, baseline)
		}), nil
	}
	return h.invocation(ctx, inv, false), nil
}

// invocationsQuery is GET /v1/convai/test-invocations' query, as its
// operation documents and the edge has checked it.
type invocationsQuery struct {
	PageSize  int    `json:"page_size"`
	Cursor    string `json:"cursor"`
	AgentID   string `json:"agent_id"`
	BranchID  string `json:"branch_id"`
	TestID    string `json:"test_id"`
	Search    string `json:"search"`
	StartTime *int64 `json:"start_time"`
	EndTime   *int64 `json:"end_time"`
}

func (h *Handlers) ListInvocations(c *api.Call) (any, error) {
	params := invocationsQuery{PageSize: 30}
	if err := c.Query(&params); err != nil {
		return nil, err
	}
	q := app.InvocationFilter{WorkspaceID: c.Caller().WorkspaceID, AgentID: params.AgentID, BranchID: params.BranchID,
		TestID: params.TestID, Search: params.Search, Limit: params.PageSize, StartTime: params.StartTime, EndTime: params.EndTime}
	page, err := h.App.PageInvocations(c.Context(), q, params.Cursor)
	if err != nil {
		return nil, err
	}
	return pageView("results", page, invocationView), nil
}

func (h *Handlers) CancelInvocation(c *api.Call) (any, error) {
	inv, err := h.App.Cancel(c.Context(), c.Caller(), c.ID())
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": inv.GetInvocationId(), "status": inv.GetStatus(), "cancelled": true}, nil
}

func (h *Handlers) ResubmitInvocation(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.Resubmit, resubmittedView)
}

// resubmittedView answers a resubmission: the invocation and its newest
// attempt's runs.
func resubmittedView(inv *testingv1.Invocation) map[string]any {
	rs := inv.GetResubmissions()
	last := rs[len(rs)-1]
	return map[string]any{"id": inv.GetInvocationId(), "status": inv.GetStatus(), "attempt": last.GetAttempt(), "test_run_ids": last.GetRunIds()}
}
