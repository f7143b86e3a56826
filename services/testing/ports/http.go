// Package ports serves agent tests, folders and invocations over HTTP
// (through the gateway) in the public wire shapes.
package ports

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Handlers serve the testing operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

func (h *Handlers) CreateTest(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	body, err := httpx.ReadBody(r)
	if err != nil {
		return err
	}
	t, err := h.App.CreateTest(r.Context(), c, body)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"id": t.GetTestId()})
	return nil
}

// getTest answers the test's definition and its reliability over its
// recent invocations (pass rate, Wilson 95% interval, pass^k with k from
// ?k=, default 3, and the agent's latency: turn and first token p50, p95
// and max), over them all and per invocation.
func (h *Handlers) GetTest(w http.ResponseWriter, r *http.Request) error {
	c := principal.Of(r)
	var q struct {
		K int `json:"k"` // the edge checked it against the parameter's 1..10
	}
	if err := api.DecodeQuery(r, &q); err != nil {
		return err
	}
	k := app.ReliabilityK
	if q.K > 0 {
		k = q.K
	}
	t, _, err := h.App.Tests.Get(r.Context(), c.WorkspaceID, mux.Vars(r)["test_id"])
	if err != nil {
		return err
	}
	overall, per, err := h.App.TestReliability(r.Context(), c.WorkspaceID, t.GetTestId(), k)
	if err != nil {
		return err
	}
	rel := ReliabilityView(overall)
	invocations := make([]map[string]any, len(per))
	var turnMs, firstTokenMs []int64
	for i, p := range per {
		invocations[i] = ReliabilityView(p.Reliability)
		invocations[i]["invocation_id"], invocations[i]["created_at_unix_secs"] = p.InvocationID, p.CreatedAtUnix
		invocations[i]["agent_latency"] = latencyOf(p.TurnMs, p.FirstTokenMs)
		turnMs, firstTokenMs = append(turnMs, p.TurnMs...), append(firstTokenMs, p.FirstTokenMs...)
	}
	rel["invocations"] = invocations
	rel["agent_latency"] = latencyOf(turnMs, firstTokenMs)
	view := TestView(t)
	view["reliability"] = rel
	markDeletedConversation(view, c.WorkspaceID, h.App.ConversationDeleted)
	httpx.WriteJSON(w, http.StatusOK, view)
	return nil
}

func (h *Handlers) UpdateTest(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	body, err := httpx.ReadBody(r)
	if err != nil {
		return err
	}
	t, err := h.App.UpdateTest(r.Context(), c, mux.Vars(r)["test_id"], body)
	return httpx.Reply(w, http.StatusOK, t, err, TestView)
}

func (h *Handlers) DeleteTest(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	if err := h.App.DeleteTest(r.Context(), c, mux.Vars(r)["test_id"]); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// testsQuery is GET /v1/convai/agent-testing's query, as its operation
// documents and the edge has checked it.
type testsQuery struct {
	PageSize       int      `json:"page_size"`
	Cursor         string   `json:"cursor"`
	Search         string   `json:"search"`
	ParentFolderID *string  `json:"parent_folder_id"`
	SortMode       string   `json:"sort_mode"`
	CreatedBy      string   `json:"created_by_user_id"`
	IncludeFolders bool     `json:"include_folders"`
	Types          []string `json:"types"`
}

func (h *Handlers) ListTests(w http.ResponseWriter, r *http.Request) error {
	c := principal.Of(r)
	params := testsQuery{PageSize: 30}
	if err := api.DecodeQuery(r, &params); err != nil {
		return err
	}
	if params.ParentFolderID == nil && r.URL.Query().Has("parent_folder_id") {
		root := "" // an empty value, the root, is one DecodeQuery leaves out
		params.ParentFolderID = &root
	}
	tq := app.TestQuery{WorkspaceID: c.WorkspaceID, Search: params.Search, Types: params.Types, Limit: params.PageSize,
		IncludeFolder: params.IncludeFolders, FoldersFirst: params.SortMode == "folders_first", ParentFolder: params.ParentFolderID}
	switch by := params.CreatedBy; by {
	case "":
	case "@me":
		tq.CreatedBy = c.UserID
	default:
		tq.CreatedBy = by
	}
	page, err := h.App.PageTests(r.Context(), tq, params.Cursor)
	if err != nil {
		return err
	}
	return writePage(w, "tests", page, entryView)
}

// writePage answers one page of a listing, its rows under key, each as
// view shows it.
func writePage[T any](w http.ResponseWriter, key string, page app.Page[T], view func(T) map[string]any) error {
	httpx.WriteJSON(w, http.StatusOK, map[string]any{key: mapEach(page.Rows, view), "has_more": page.HasMore, "next_cursor": page.NextCursor})
	return nil
}

func mapEach[T, V any](xs []T, f func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func (h *Handlers) Summaries(w http.ResponseWriter, r *http.Request) error {
	c := principal.Of(r)
	var in struct {
		TestIDs []string `json:"test_ids"`
	}
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	listed, err := h.App.Summaries(r.Context(), c.WorkspaceID, in.TestIDs)
	if err != nil {
		return err
	}
	out := make(map[string]map[string]any, len(listed))
	for id, e := range listed {
		out[id] = entryView(e)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"tests": out})
	return nil
}

func (h *Handlers) BulkMove(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	var in struct {
		EntityIDs []string `json:"entity_ids"`
		MoveTo    *string  `json:"move_to"`
	}
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	moveTo := ""
	if in.MoveTo != nil {
		moveTo = *in.MoveTo
	}
	n, err := h.App.BulkMove(r.Context(), c, in.EntityIDs, moveTo)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"moved_count": n, "move_to": nullable(moveTo)})
	return nil
}

func nullable(s string) any {
	if s == "" || s == "root" {
		return nil
	}
	return s
}

// folderInput is a folder create or rename body; the schema (FolderInput)
// requires the name and bounds it.
type folderInput struct {
	Name           string  `json:"name"`
	ParentFolderID *string `json:"parent_folder_id"`
}

func (h *Handlers) CreateFolder(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	var in folderInput
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	parent := ""
	if in.ParentFolderID != nil {
		parent = *in.ParentFolderID
	}
	f, err := h.App.CreateFolder(r.Context(), c, strings.TrimSpace(in.Name), parent)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"id": f.GetFolderId(), "name": f.GetName()})
	return nil
}

func (h *Handlers) writeFolder(w http.ResponseWriter, r *http.Request, ws string, f *testingv1.Folder) error {
	d, err := h.App.FolderDetails(r.Context(), ws, f)
	return httpx.Reply(w, http.StatusOK, d, err, folderView)
}

func (h *Handlers) GetFolder(w http.ResponseWriter, r *http.Request) error {
	c := principal.Of(r)
	f, _, err := h.App.Folders.Get(r.Context(), c.WorkspaceID, mux.Vars(r)["folder_id"])
	if err != nil {
		return err
	}
	return h.writeFolder(w, r, c.WorkspaceID, f)
}

func (h *Handlers) RenameFolder(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	var in folderInput
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	f, err := h.App.RenameFolder(r.Context(), c, mux.Vars(r)["folder_id"], strings.TrimSpace(in.Name))
	if err != nil {
		return err
	}
	return h.writeFolder(w, r, c.WorkspaceID, f)
}

func (h *Handlers) DeleteFolder(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	var q struct {
		Force bool `json:"force"`
	}
	if err := api.DecodeQuery(r, &q); err != nil {
		return err
	}
	return httpx.NoContent(w, h.App.DeleteFolder(r.Context(), c, mux.Vars(r)["folder_id"], q.Force))
}

func (h *Handlers) RunTests(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	var in app.RunTestsInput
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	inv, err := h.App.RunTests(r.Context(), c, mux.Vars(r)["agent_id"], in)
	if err != nil {
		return err
	}
	h.writeInvocation(w, r, inv, true)
	return nil
}

func (h *Handlers) writeInvocation(w http.ResponseWriter, r *http.Request, inv *testingv1.Invocation, created bool) {
	h.stream(w, r, "application/json", func(w io.Writer) error { return writeInvocation(r.Context(), h.App, w, inv, created) })
}

// stream answers 200 with the body write streams.
func (h *Handlers) stream(w http.ResponseWriter, r *http.Request, contentType string, write func(io.Writer) error) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if err := write(w); err != nil {
		// The status line is sent; cut the body short so the client sees
		// a truncated response rather than a wrong one. A caller that
		// left (or stopped reading) is nobody's error.
		if log := httpx.LoggerFrom(r.Context()); r.Context().Err() != nil {
			log.Debug("invocation stream ended with its caller", "cause", context.Cause(r.Context()))
		} else {
			log.Error("invocation stream failed", "err", err)
		}
		panic(http.ErrAbortHandler)
	}
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
func invocationFormat(r *http.Request, format string) string {
	if format != "" {
		return format // json or junit: the edge checked it
	}
	if prefersXML(r.Header.Values("Accept")) {
		return formatJUnit
	}
	return formatJSON
}

// prefersXML reports whether Accept gives application/xml or text/xml a
// higher quality than application/json. Wildcards choose nothing: the
// default is JSON.
func prefersXML(accept []string) bool {
	xmlQ, jsonQ := 0.0, 0.0
	for _, line := range accept {
		for _, rng := range strings.Split(line, ",") {
			params := strings.Split(rng, ";")
			mt := strings.ToLower(strings.TrimSpace(params[0]))
			q := 1.0
			for _, p := range params[1:] {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && f >= 0 && f <= 1 {
						q = f
					}
				}
			}
			switch mt {
			case "application/xml", "text/xml":
				xmlQ = max(xmlQ, q)
			case "application/json":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return xmlQ > 0 && xmlQ > jsonQ
}

func (h *Handlers) GetInvocation(w http.ResponseWriter, r *http.Request) error {
	c := principal.Of(r)
	var q struct {
		Format   string `json:"format"`
		Baseline string `json:"baseline_invocation_id"`
	}
	if err := api.DecodeQuery(r, &q); err != nil {
		return err
	}
	format := invocationFormat(r, q.Format)
	// An invocation older than the run retention answers that its runs
	// were deleted, rather than every run pending.
	inv, err := h.App.Invocation(r.Context(), c.WorkspaceID, mux.Vars(r)["invocation_id"])
	if err != nil {
		return err
	}
	// A baseline of another workspace, unknown or malformed is answered as
	// an unknown invocation.
	var baseline *testingv1.Invocation
	if q.Baseline != "" {
		if baseline, err = h.App.Invocation(r.Context(), c.WorkspaceID, q.Baseline); err != nil {
			return err
		}
	}
	switch {
	case format == formatJUnit:
		h.stream(w, r, "application/xml; charset=utf-8", func(w io.Writer) error {
			return writeInvocationJUnit(r.Context(), h.App, w, inv, baseline)
		})
	case baseline != nil:
		h.stream(w, r, "application/json", func(w io.Writer) error {
			return writeInvocationCompared(r.Context(), h.App, w, inv, baseline)
		})
	default:
		h.writeInvocation(w, r, inv, false)
	}
	return nil
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

func (h *Handlers) ListInvocations(w http.ResponseWriter, r *http.Request) error {
	c := principal.Of(r)
	params := invocationsQuery{PageSize: 30}
	if err := api.DecodeQuery(r, &params); err != nil {
		return err
	}
	q := app.InvocationFilter{WorkspaceID: c.WorkspaceID, AgentID: params.AgentID, BranchID: params.BranchID,
		TestID: params.TestID, Search: params.Search, Limit: params.PageSize, StartTime: params.StartTime, EndTime: params.EndTime}
	page, err := h.App.PageInvocations(r.Context(), q, params.Cursor)
	if err != nil {
		return err
	}
	return writePage(w, "results", page, invocationView)
}

func (h *Handlers) CancelInvocation(w http.ResponseWriter, r *http.Request) error {
	c := api.CallerOf(r)
	inv, err := h.App.Cancel(r.Context(), c, mux.Vars(r)["invocation_id"])
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"id": inv.GetInvocationId(), "status": inv.GetStatus(), "cancelled": true})
	return nil
}

func (h *Handlers) ResubmitInvocation(w http.ResponseWriter, r *http.Request) error {
	return api.CommandOn(w, r, http.StatusOK, h.App.Resubmit, resubmittedView)
}

// resubmittedView answers a resubmission: the invocation and its newest
// attempt's runs.
func resubmittedView(inv *testingv1.Invocation) map[string]any {
	rs := inv.GetResubmissions()
	last := rs[len(rs)-1]
	return map[string]any{"id": inv.GetInvocationId(), "status": inv.GetStatus(), "attempt": last.GetAttempt(), "test_run_ids": last.GetRunIds()}
}
