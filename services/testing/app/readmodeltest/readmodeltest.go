// Package readmodeltest is the conformance suite of the testing
// app.ReadModel: every implementation must answer every listing exactly
// as the reference does (filter, then sort, then keyset page over every
// live entry or invocation), through moves, renames, deletions, stale
// redeliveries and writes between pages.
package readmodeltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// reference is the meaning of the read model: the newest state of each
// aggregate, and listings computed from all of them.
type reference struct {
	entries     map[string]app.Entry // by workspace/id
	entrySeq    map[string]uint64
	invocations map[string]app.InvocationSummary
	invSeq      map[string]uint64
}

func newReference() *reference {
	return &reference{entries: map[string]app.Entry{}, entrySeq: map[string]uint64{},
		invocations: map[string]app.InvocationSummary{}, invSeq: map[string]uint64{}}
}

func (r *reference) putEntry(seq uint64, e app.Entry) {
	k := e.WorkspaceID + "/" + e.ID
	if r.entrySeq[k] >= seq {
		return
	}
	e.Seq = int64(seq)
	r.entrySeq[k], r.entries[k] = seq, e
}

func (r *reference) putInvocation(seq uint64, s app.InvocationSummary) {
	k := s.WorkspaceID + "/" + s.ID
	if r.invSeq[k] >= seq {
		return
	}
	r.invSeq[k], r.invocations[k] = seq, s
}

func (r *reference) pageEntries(q app.EntryQuery) ([]string, bool) {
	var rows []app.Entry
	for _, e := range r.entries {
		if q.Matches(e) {
			rows = append(rows, e)
		}
	}
	slices.SortFunc(rows, func(a, b app.Entry) int { return b.PositionOf().Compare(a.PositionOf(), q.FoldersFirst) })
	return firstPage(rows, q.Limit, entryID)
}

func (r *reference) pageInvocations(q app.InvocationFilter) ([]string, bool) {
	var rows []app.InvocationSummary
	for _, s := range r.invocations {
		if q.Matches(s) {
			rows = append(rows, s)
		}
	}
	slices.SortFunc(rows, func(a, b app.InvocationSummary) int { return b.PositionOf().Compare(a.PositionOf()) })
	return firstPage(rows, q.Limit, invocationID)
}

// firstPage is the ids of the first limit of the sorted rows, and whether
// more follow them.
func firstPage[R any](rows []R, limit int, id func(R) string) ([]string, bool) {
	more := len(rows) > limit
	rows = rows[:min(len(rows), limit)]
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = id(r)
	}
	return out, more
}

func (r *reference) childCount(ws, folder string) int {
	n := 0
	for _, e := range r.entries {
		if e.WorkspaceID == ws && !e.Deleted && e.ParentFolderID == folder {
			n++
		}
	}
	return n
}

func (r *reference) running() []string {
	var out []string
	for _, s := range r.invocations {
		if s.Status == domain.InvocationRunning {
			out = append(out, s.WorkspaceID+"/"+s.ID)
		}
	}
	slices.Sort(out)
	return out
}

// checkActive checks Active in each workspace: every running invocation
// of it and no other when the limit allows, else exactly limit of them.
func checkActive(t *testing.T, rm app.ReadModel, ref *reference, spaces ...string) {
	t.Helper()
	for _, ws := range spaces {
		var want []string
		for _, k := range ref.running() {
			if strings.HasPrefix(k, ws+"/") {
				want = append(want, strings.TrimPrefix(k, ws+"/"))
			}
		}
		for _, limit := range []int{0, 1, 2, len(want), 1 << 20} {
			got, err := rm.Active(context.Background(), ws, limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				if s.WorkspaceID != ws || s.Status != domain.InvocationRunning {
					t.Fatalf("Active(%s) gave %s of %s, %s", ws, s.ID, s.WorkspaceID, s.Status)
				}
				if s.AttemptRuns != ref.invocations[ws+"/"+s.ID].AttemptRuns || s.Attempt != ref.invocations[ws+"/"+s.ID].Attempt {
					t.Fatalf("Active(%s) gave %+v; want %+v", ws, s, ref.invocations[ws+"/"+s.ID])
				}
				ids = append(ids, s.ID)
			}
			slices.Sort(ids)
			if len(ids) != min(limit, len(want)) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("Active(%s, %d) = %v; want %d of %v", ws, limit, ids, min(limit, len(want)), want)
			}
			for _, id := range ids {
				if !slices.Contains(want, id) {
					t.Fatalf("Active(%s, %d) = %v: %s is not running; want %d of %v", ws, limit, ids, id, min(limit, len(want)), want)
				}
			}
		}
	}
}

// history applies the same writes to a read model and the reference.
type history struct {
	t   *testing.T
	rm  app.ReadModel
	ref *reference
	rng *rand.Rand
	seq uint64
}

func (h *history) test(seq uint64, t *testingv1.Test) {
	h.t.Helper()
	if err := h.rm.ApplyTest(context.Background(), seq, t); err != nil {
		h.t.Fatal(err)
	}
	h.ref.putEntry(seq, app.TestEntry(t))
}

func (h *history) folder(seq uint64, f *testingv1.Folder) {
	h.t.Helper()
	if err := h.rm.ApplyFolder(context.Background(), seq, f); err != nil {
		h.t.Fatal(err)
	}
	h.ref.putEntry(seq, app.FolderEntry(f))
}

func (h *history) invocation(seq uint64, inv *testingv1.Invocation) {
	h.t.Helper()
	if err := h.rm.ApplyInvocation(context.Background(), seq, inv); err != nil {
		h.t.Fatal(err)
	}
	h.ref.putInvocation(seq, app.SummaryOf(inv))
}

func (h *history) next() uint64 { h.seq++; return h.seq }

// nanosecond is a creation's nanosecond within its second: many share a
// second, some a nanosecond (then the id orders), and some were made
// before the nanosecond was kept (0).
func (h *history) nanosecond(second int64) int64 {
	if h.rng.IntN(4) == 0 {
		return 0
	}
	return second*1e9 + int64(h.rng.IntN(3))*400
}

func (h *history) pick(xs ...string) string { return xs[h.rng.IntN(len(xs))] }

// Names, times and owners collide often, so ties in every order and every
// filter are exercised.
var words = []string{"Refund", "refund policy", "Greeting", "GREETING test", "Booking", "escalation", "Tool call"}

// build writes a workspace of folders (nested), tests and invocations,
// then moves, renames, deletes and redelivers stale versions.
func (h *history) build(ws string, folders, tests, invocations int) {
	var folderIDs []string
	var fs []*testingv1.Folder
	for i := range folders {
		parent := ""
		if i > 0 && h.rng.IntN(3) > 0 {
			parent = folderIDs[h.rng.IntN(len(folderIDs))]
		}
		f := &testingv1.Folder{FolderId: fmt.Sprintf("tfld_%s_%02d", ws, i), WorkspaceId: ws, Name: h.pick(words...),
			ParentFolderId: parent, CreatedByUserId: h.pick("user_1", "user_2"), CreatedAtUnix: 1_700_000_000 + int64(h.rng.IntN(8))}
		f.CreatedAtUnixNanos = h.nanosecond(f.CreatedAtUnix)
		folderIDs = append(folderIDs, f.FolderId)
		fs = append(fs, f)
		h.folder(h.next(), f)
	}
	var ts []*testingv1.Test
	for i := range tests {
		t := &testingv1.Test{TestId: fmt.Sprintf("test_%s_%03d", ws, h.rng.IntN(1000)*1000+i), WorkspaceId: ws, Name: h.pick(words...),
			Type: h.pick(domain.TypeLLM, domain.TypeTool, domain.TypeSimulation), CreatedByUserId: h.pick("user_1", "user_2"),
			CreatedAtUnix: 1_700_000_000 + int64(h.rng.IntN(8))}
		t.CreatedAtUnixNanos = h.nanosecond(t.CreatedAtUnix)
		if len(folderIDs) > 0 && h.rng.IntN(2) == 0 {
			t.ParentFolderId = folderIDs[h.rng.IntN(len(folderIDs))]
		}
		ts = append(ts, t)
		h.test(h.next(), t)
	}
	// Changes: moves (positions in the parent's order change sets),
	// renames, deletions; each followed by its previous version delivered
	// late, which must change nothing.
	for i, t := range ts {
		next := proto.Clone(t).(*testingv1.Test)
		switch i % 5 {
		case 0:
			next.ParentFolderId = ""
			if len(folderIDs) > 0 {
				next.ParentFolderId = folderIDs[h.rng.IntN(len(folderIDs))]
			}
		case 1:
			next.Name = "Renamed " + next.Name
		case 2:
			now := int64(1)
			next.DeletedAtUnix = &now
		default:
			continue
		}
		seq := h.next()
		h.test(seq, next)
		h.test(seq-1, t)
	}
	for i, f := range fs {
		if i%4 == 3 {
			next := proto.Clone(f).(*testingv1.Folder)
			now := int64(1)
			next.DeletedAtUnix = &now
			h.folder(h.next(), next)
		}
	}
	for i := range invocations {
		inv := &testingv1.Invocation{InvocationId: fmt.Sprintf("tinv_%s_%03d", ws, h.rng.IntN(1000)*1000+i), WorkspaceId: ws,
			AgentId: h.pick("agent_1", "agent_2", "agent_3"), BranchId: h.pick("", "", "branch_1", "main"), Title: h.pick(words...),
			CreatedAtUnix: 1_700_000_000 + int64(h.rng.IntN(12)), Status: domain.InvocationRunning, RepeatCount: 1}
		inv.CreatedAtUnixNanos = h.nanosecond(inv.CreatedAtUnix)
		for range 1 + h.rng.IntN(4) {
			if len(ts) > 0 {
				inv.Tests = append(inv.Tests, &testingv1.PlannedTest{TestId: ts[h.rng.IntN(len(ts))].TestId})
			}
		}
		seq := h.next()
		h.invocation(seq, inv)
		if i%3 > 0 {
			done := proto.Clone(inv).(*testingv1.Invocation)
			done.Status, done.PassedCount = h.pick(domain.InvocationCompleted, domain.InvocationCancelled), 1
			h.invocation(h.next(), done)
			h.invocation(seq, inv) // stale: stays done
		}
	}
}

// entryQueries are the listings checked in workspace ws: every filter
// alone and some together, with folders first or not.
func entryQueries(ws string, folders []string) []app.EntryQuery {
	root, some := "", folders[len(folders)/2]
	base := []app.EntryQuery{
		{Tests: true}, {Folders: true}, {Folders: true, Tests: true},
		{Tests: true, Parent: &root}, {Folders: true, Tests: true, Parent: &root}, {Folders: true, Tests: true, Parent: &some},
		{Tests: true, TestTypes: []string{domain.TypeTool}}, {Folders: true, Tests: true, TestTypes: []string{domain.TypeLLM, domain.TypeSimulation}},
		{Tests: true, CreatedBy: "user_2"}, {Folders: true, Tests: true, NotCreatedBy: "user_1"}, {Tests: true, NotCreatedBy: "user_2", Search: "e"}, {Folders: true, Tests: true, Search: "reFUnd"}, {Tests: true, Search: "renamed gre"},
		{Folders: true, Tests: true, Parent: &some, Search: "e", CreatedBy: "user_1"},
		{Tests: true, Search: "no such name"},
	}
	var out []app.EntryQuery
	for _, q := range base {
		for _, ff := range []bool{false, true} {
			q.WorkspaceID, q.FoldersFirst = ws, ff
			out = append(out, q)
		}
	}
	return out
}

func invocationQueries(ws string, aTest string) []app.InvocationFilter {
	start, end := int64(1_700_000_003), int64(1_700_000_008)
	return []app.InvocationFilter{
		{}, {AgentID: "agent_2"}, {BranchID: "branch_1"}, {BranchID: "main"}, {TestID: aTest}, {Search: "REFUND"},
		{StartTime: &start}, {EndTime: &end}, {StartTime: &start, EndTime: &end},
		{AgentID: "agent_1", TestID: aTest, EndTime: &end}, {AgentID: "agent_none"}, {TestID: "test_none"},
	}
}

// Run checks the read model open makes (a fresh, empty one each call). A
// store that reads every document per query may ask for a smaller scale
// (1 = full size).
func Run(t *testing.T, scale float64, open func(t *testing.T) app.ReadModel) {
	n := func(full int) int { return max(int(float64(full)*scale), 4) }
	t.Run("listings equal the reference", func(t *testing.T) {
		ctx := context.Background()
		h := &history{t: t, rm: open(t), ref: newReference(), rng: rand.New(rand.NewPCG(1, 2))}
		h.build("ws_a", n(12), n(80), n(50))
		h.build("ws_b", 3, n(10), n(5))
		var folders []string
		var aTest string
		for _, e := range h.ref.entries {
			if e.WorkspaceID == "ws_a" && e.Kind == app.KindFolder {
				folders = append(folders, e.ID)
			} else if e.WorkspaceID == "ws_a" && !e.Deleted && (aTest == "" || e.ID < aTest) {
				aTest = e.ID
			}
		}
		slices.Sort(folders)
		for _, q := range entryQueries("ws_a", folders) {
			for _, limit := range []int{4, 100} {
				q.Limit = limit
				walkEntries(t, h.rm, h.ref, q)
			}
		}
		for _, q := range invocationQueries("ws_a", aTest) {
			for _, limit := range []int{3, 100} {
				q.WorkspaceID, q.Limit = "ws_a", limit
				walkInvocations(t, h.rm, h.ref, q)
			}
		}
		// Lookups: found, deleted, another workspace's, unknown.
		var ids []string
		for k := range h.ref.entries {
			ids = append(ids, h.ref.entries[k].ID)
		}
		ids = append(ids, "test_unknown")
		got, err := h.rm.Entries(ctx, "ws_a", ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			want, ok := h.ref.entries["ws_a/"+id]
			ok = ok && !want.Deleted
			if g, found := got[id]; found != ok || (ok && (g.Name != want.Name || g.ParentFolderID != want.ParentFolderID || g.Seq != want.Seq || g.Kind != want.Kind)) {
				t.Fatalf("Entries[%s] = %+v (%v); want %+v (%v)", id, g, found, want, ok)
			}
		}
		for _, f := range append(folders, "", "tfld_unknown") {
			c, err := h.rm.ChildCount(ctx, "ws_a", f)
			if err != nil || c != h.ref.childCount("ws_a", f) {
				t.Fatalf("ChildCount(%q) = %d, %v; want %d", f, c, err, h.ref.childCount("ws_a", f))
			}
		}
		run, err := h.rm.Running(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var running []string
		for _, s := range run {
			running = append(running, s.WorkspaceID+"/"+s.ID)
		}
		slices.Sort(running)
		if want := h.ref.running(); !slices.Equal(running, want) {
			t.Fatalf("Running = %v; want %v", running, want)
		}
		checkActive(t, h.rm, h.ref, "ws_a", "ws_b", "ws_none")
	})

	t.Run("what is made in one second is listed as it was made", func(t *testing.T) {
		// Keyed ids are digests, in no order of time: made 100, 200 and
		// 300 ns into a second, newest first, then what was made before
		// the nanosecond was kept, then the second before, in every page
		// size.
		h := &history{t: t, rm: open(t), ref: newReference(), rng: rand.New(rand.NewPCG(5, 6))}
		const second = 1_700_000_000
		for _, made := range []struct {
			id      string
			created int64
			nanos   int64
		}{{"c", second, second*1e9 + 100}, {"b", second, second*1e9 + 200}, {"a", second, second*1e9 + 300},
			{"z", second, 0}, {"y", second - 1, second*1e9 - 1}} {
			h.invocation(h.next(), &testingv1.Invocation{InvocationId: "tinv_" + made.id, WorkspaceId: "ws_a", Status: domain.InvocationRunning,
				CreatedAtUnix: made.created, CreatedAtUnixNanos: made.nanos})
			// Tests, and a folder among them.
			kind := map[bool]string{true: "tfld_", false: "test_"}[made.id == "b"]
			if kind == "tfld_" {
				h.folder(h.next(), &testingv1.Folder{FolderId: kind + made.id, WorkspaceId: "ws_a", Name: "f", CreatedAtUnix: made.created, CreatedAtUnixNanos: made.nanos})
			} else {
				h.test(h.next(), &testingv1.Test{TestId: kind + made.id, WorkspaceId: "ws_a", Name: "t", Type: domain.TypeLLM,
					CreatedAtUnix: made.created, CreatedAtUnixNanos: made.nanos})
			}
		}
		want := []string{"tinv_a", "tinv_b", "tinv_c", "tinv_z", "tinv_y"}
		end := int64(second)
		for _, limit := range []int{1, 2, 10} {
			for _, q := range []app.InvocationFilter{{WorkspaceID: "ws_a", Limit: limit}, {WorkspaceID: "ws_a", EndTime: &end, Limit: limit}} {
				if got := pageWhileWriting(t, q, h.rm.PageInvocations, invocationID, afterInvocation, func(int) {}); !slices.Equal(got, want) {
					t.Fatalf("invocations %+v gave %v; want %v", q, got, want)
				}
				walkInvocations(t, h.rm, h.ref, q)
			}
		}
		for ff, want := range map[bool][]string{false: {"test_a", "tfld_b", "test_c", "test_z", "test_y"}, true: {"tfld_b", "test_a", "test_c", "test_z", "test_y"}} {
			for _, limit := range []int{1, 2, 10} {
				q := app.EntryQuery{WorkspaceID: "ws_a", Folders: true, Tests: true, FoldersFirst: ff, Limit: limit}
				if got := pageWhileWriting(t, q, h.rm.PageEntries, entryID, afterEntry, func(int) {}); !slices.Equal(got, want) {
					t.Fatalf("folders first %v, pages of %d gave %v; want %v", ff, limit, got, want)
				}
				walkEntries(t, h.rm, h.ref, q)
			}
		}
	})

	t.Run("paging under concurrent writes never repeats or skips", func(t *testing.T) {
		h := &history{t: t, rm: open(t), ref: newReference(), rng: rand.New(rand.NewPCG(3, 4))}
		h.build("ws_a", 4, n(40), n(30))
		for _, ff := range []bool{false, true} {
			eq := app.EntryQuery{WorkspaceID: "ws_a", Folders: true, Tests: true, FoldersFirst: ff, Limit: 7}
			want, _ := h.ref.pageEntries(app.EntryQuery{WorkspaceID: "ws_a", Folders: true, Tests: true, FoldersFirst: ff, Limit: 1 << 30})
			// Between pages, a newer entry, listed before the cursor: a
			// test, or with folders first a folder (a new test would
			// rightly come after a cursor among the folders).
			seen := pageWhileWriting(t, eq, h.rm.PageEntries, entryID, afterEntry, func(round int) {
				id, at := fmt.Sprintf("new_%d_%v", round, ff), 1_800_000_000+int64(round)
				if ff {
					h.folder(h.next(), &testingv1.Folder{FolderId: "tfld_" + id, WorkspaceId: "ws_a", Name: "new", CreatedAtUnix: at})
				} else {
					h.test(h.next(), &testingv1.Test{TestId: "test_" + id, WorkspaceId: "ws_a", Name: "new", Type: domain.TypeLLM, CreatedAtUnix: at})
				}
			})
			if !slices.Equal(seen, want) {
				t.Fatalf("folders first %v: pages gave %v; want %v", ff, seen, want)
			}
		}
		iq := app.InvocationFilter{WorkspaceID: "ws_a", Limit: 4}
		want, _ := h.ref.pageInvocations(app.InvocationFilter{WorkspaceID: "ws_a", Limit: 1 << 30})
		seen := pageWhileWriting(t, iq, h.rm.PageInvocations, invocationID, afterInvocation, func(round int) {
			h.invocation(h.next(), &testingv1.Invocation{InvocationId: fmt.Sprintf("tinv_new_%d", round), WorkspaceId: "ws_a",
				Status: domain.InvocationRunning, CreatedAtUnix: 1_800_000_000})
		})
		if !slices.Equal(seen, want) {
			t.Fatalf("invocation pages gave %v; want %v", seen, want)
		}
	})
}

// walkEntries pages through q and checks every page against the reference.
func walkEntries(t *testing.T, rm app.ReadModel, ref *reference, q app.EntryQuery) {
	t.Helper()
	walk(t, "PageEntries", q, rm.PageEntries, ref.pageEntries, entryID, afterEntry)
}

// walkInvocations pages through q and checks every page.
func walkInvocations(t *testing.T, rm app.ReadModel, ref *reference, q app.InvocationFilter) {
	t.Helper()
	walk(t, "PageInvocations", q, rm.PageInvocations, ref.pageInvocations, invocationID, afterInvocation)
}

func entryID(e app.Entry) string { return e.ID }

// afterEntry moves q's cursor past last, the row a page ended with.
func afterEntry(q *app.EntryQuery, last app.Entry) { after := last.PositionOf(); q.After = &after }

func invocationID(s app.InvocationSummary) string { return s.ID }

// afterInvocation moves q's cursor past last, the row a page ended with.
func afterInvocation(q *app.InvocationFilter, last app.InvocationSummary) {
	after := last.PositionOf()
	q.After = &after
}

// pageWhileWriting pages through q to its end, calling write between
// pages (round counts them from 0), and is the ids of every page's rows
// in the order the pages gave them.
func pageWhileWriting[Q, R any](t *testing.T, q Q, page func(context.Context, Q) ([]R, bool, error),
	id func(R) string, after func(*Q, R), write func(round int)) []string {
	t.Helper()
	var seen []string
	for round := 0; ; round++ {
		rows, more, err := page(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			seen = append(seen, id(r))
		}
		if !more {
			return seen
		}
		write(round)
		after(&q, rows[len(rows)-1])
	}
}

// walk pages through q with page, continuing after each page's last row,
// and checks each page's ids and "more" against the reference's.
func walk[Q, R any](t *testing.T, name string, q Q, page func(context.Context, Q) ([]R, bool, error),
	reference func(Q) ([]string, bool), id func(R) string, after func(*Q, R)) {
	t.Helper()
	for pages := 0; pages < 1000; pages++ {
		want, wantMore := reference(q)
		rows, more, err := page(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(rows))
		for i, r := range rows {
			got[i] = id(r)
		}
		if !slices.Equal(got, want) || more != wantMore {
			t.Fatalf("%s(%+v) page %d = %v more=%v; want %v more=%v", name, q, pages, got, more, want, wantMore)
		}
		if !more {
			return
		}
		after(&q, rows[len(rows)-1])
	}
	t.Fatal("paging did not end")
}
