package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/eventlogtest"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Rule tests of tests and folders (the tree, moves, deletion) on the
// memory adapters.

func (w *world) folder(name, parent string) string {
	w.t.Helper()
	f, err := w.a.CreateFolder(context.Background(), w.c, name, parent)
	if err != nil {
		w.t.Fatal(err)
	}
	return f.GetFolderId()
}

// billingAndRefunds are two folders: Billing at the root, and Refunds
// inside it.
func (w *world) billingAndRefunds() (top, sub string) {
	w.t.Helper()
	top = w.folder("Billing", "")
	return top, w.folder("Refunds", top)
}

func (w *world) testIn(name, folder string) string {
	w.t.Helper()
	t, err := w.a.CreateTest(context.Background(), w.c, fmt.Appendf(nil,
		`{"type":"llm","name":%q,"success_condition":"answers","parent_folder_id":%q}`, name, folder))
	if err != nil {
		w.t.Fatal(err)
	}
	return t.GetTestId()
}

func (w *world) parentOf(testID string) string {
	w.t.Helper()
	t, _, err := w.a.Tests.Get(context.Background(), "ws", testID)
	if err != nil {
		w.t.Fatal(err)
	}
	return t.GetParentFolderId()
}

// fieldErrorAt is the 422 entry at loc, failing the test when err is not
// a 422 or has none there.
func fieldErrorAt(t *testing.T, err error, loc ...any) apperr.FieldError {
	t.Helper()
	var v apperr.ValidationErrors
	if !errors.As(err, &v) {
		t.Fatalf("want a 422, got %v", err)
	}
	for _, f := range v {
		if slices.Equal(f.Loc, loc) {
			return f
		}
	}
	t.Fatalf("no error at %v in %+v", loc, v)
	return apperr.FieldError{}
}

// A folder with something in it is deleted only with force, and then with
// everything under it; a keyed deletion replayed answers as it did.
func TestAFolderIsDeletedWithItsContentsOnlyByForce(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	top, sub := w.billingAndRefunds()
	inTop, inSub := w.testIn("Invoice", top), w.testIn("Refund", sub)

	err := w.a.DeleteFolder(ctx, w.c, top, false)
	if apperr.KindOf(err) != apperr.Conflict {
		t.Fatalf("deleting a folder holding a test and a folder without force: %v", err)
	}
	if _, _, err := w.a.Tests.Get(ctx, "ws", inSub); err != nil {
		t.Fatalf("a refused deletion deleted a test: %v", err)
	}

	keyed := w.c
	keyed.CommandID = "delete-billing"
	if err := w.a.DeleteFolder(ctx, keyed, top, true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{inTop, inSub} {
		if _, _, err := w.a.Tests.Get(ctx, "ws", id); apperr.KindOf(err) != apperr.NotFound {
			t.Errorf("test %s under the deleted folder: %v", id, err)
		}
	}
	for _, id := range []string{top, sub} {
		if _, _, err := w.a.Folders.Get(ctx, "ws", id); apperr.KindOf(err) != apperr.NotFound {
			t.Errorf("folder %s: %v", id, err)
		}
	}
	if err := w.a.DeleteFolder(ctx, keyed, top, true); err != nil {
		t.Fatalf("the keyed deletion replayed: %v", err)
	}
	if err := w.a.DeleteFolder(ctx, w.c, top, true); apperr.KindOf(err) != apperr.NotFound {
		t.Fatalf("an unkeyed deletion of a deleted folder: %v", err)
	}
}

// A move names every id it refuses, moves nothing when it refuses one, and
// never puts a folder inside itself.
func TestBulkMoveRules(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	top, sub := w.billingAndRefunds()
	other := w.folder("Hours", "")
	test := w.testIn("Invoice", "")

	_, err := w.a.BulkMove(ctx, w.c, []string{test, top, "test_missing"}, sub)
	fieldErrorAt(t, err, "body", "entity_ids", 1) // into its own subfolder
	fieldErrorAt(t, err, "body", "entity_ids", 2) // unknown
	if w.parentOf(test) != "" {
		t.Fatal("a refused move moved a test")
	}
	_, err = w.a.BulkMove(ctx, w.c, []string{test}, "tfld_missing")
	fieldErrorAt(t, err, "body", "move_to")
	for _, to := range []string{sub, ""} { // moving, and already in place
		_, err = w.a.BulkMove(ctx, w.c, []string{test, other, test}, to)
		fieldErrorAt(t, err, "body", "entity_ids", 2) // named twice
	}
	if w.parentOf(test) != "" {
		t.Fatal("a refused move moved a test")
	}

	keyed := w.c
	keyed.CommandID = "move-1"
	if n, err := w.a.BulkMove(ctx, keyed, []string{test, other}, sub); err != nil || n != 2 {
		t.Fatalf("move: %d %v", n, err)
	}
	if w.parentOf(test) != sub {
		t.Fatalf("the test is in %q, want %q", w.parentOf(test), sub)
	}
	details := func(id string) app.FolderDetails {
		f, _, err := w.a.Folders.Get(ctx, "ws", id)
		if err != nil {
			t.Fatal(err)
		}
		d, err := w.a.FolderDetails(ctx, "ws", f)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := details(other)
	if got := []string{d.FolderPath[0].ID, d.FolderPath[1].ID, d.FolderPath[2].ID}; len(d.FolderPath) != 3 || !slices.Equal(got, []string{top, sub, other}) {
		t.Fatalf("path of the moved folder: %+v", d.FolderPath)
	}
	if n := details(sub).ChildrenCount; n != 2 {
		t.Fatalf("the target folder has %d children, want 2", n)
	}
	// The same command replayed with another target moves nothing again.
	if _, err := w.a.BulkMove(ctx, keyed, []string{test}, "root"); err != nil {
		t.Fatal(err)
	}
	if w.parentOf(test) != sub {
		t.Fatalf("a replayed move moved the test to %q", w.parentOf(test))
	}
	if _, err := w.a.BulkMove(ctx, w.c, []string{test}, "root"); err != nil || w.parentOf(test) != "" {
		t.Fatalf("a new move to the root: %v, parent %q", err, w.parentOf(test))
	}
}

// A test's definition is replaced whole, into an existing folder only;
// a deleted test is gone, and so are its summaries.
func TestUpdateAndDeleteATest(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.a.UpdateTest(ctx, w.c, w.test, []byte(`{"type":"llm","name":"Hours","success_condition":"x","parent_folder_id":"tfld_missing"}`))
	fieldErrorAt(t, err, "body", "parent_folder_id")

	folder := w.folder("Front desk", "")
	updated, err := w.a.UpdateTest(ctx, w.c, w.test, fmt.Appendf(nil, `{"type":"llm","name":"Hours, renamed","success_condition":"x","parent_folder_id":%q}`, folder))
	if err != nil || updated.GetName() != "Hours, renamed" || updated.GetParentFolderId() != folder {
		t.Fatalf("update: %+v %v", updated, err)
	}
	sums, err := w.a.Summaries(ctx, "ws", []string{w.test})
	if err != nil || sums[w.test].Name != "Hours, renamed" {
		t.Fatalf("summaries after the update: %+v %v", sums, err)
	}
	_, err = w.a.Summaries(ctx, "ws", []string{w.test, w.test})
	fieldErrorAt(t, err, "body", "test_ids", 1) // repeated

	if err := w.a.DeleteTest(ctx, w.c, w.test); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.a.Tests.Get(ctx, "ws", w.test); apperr.KindOf(err) != apperr.NotFound {
		t.Fatalf("a deleted test: %v", err)
	}
	_, err = w.a.Summaries(ctx, "ws", []string{w.test})
	fieldErrorAt(t, err, "body", "test_ids", 0)
	if err := w.a.DeleteTest(ctx, w.c, w.test); apperr.KindOf(err) != apperr.NotFound {
		t.Fatalf("deleting it again: %v", err)
	}
}

// A rename is stored once: the same name again appends nothing, and a
// folder of another workspace is not found.
func TestRenameAFolder(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	id := w.folder("Billing", "")
	renamed, err := w.a.RenameFolder(ctx, w.c, id, "Invoices")
	if err != nil || renamed.GetName() != "Invoices" {
		t.Fatalf("rename: %v, %v", renamed.GetName(), err)
	}
	_, seq, _ := w.a.Folders.Get(ctx, "ws", id)
	if again, err := w.a.RenameFolder(ctx, w.c, id, "Invoices"); err != nil || again.GetName() != "Invoices" {
		t.Fatalf("the same name again: %v, %v", again.GetName(), err)
	}
	if _, after, _ := w.a.Folders.Get(ctx, "ws", id); after != seq {
		t.Fatalf("the same name again appended an event (sequence %d, then %d)", seq, after)
	}
	stranger := w.c
	stranger.WorkspaceID = "ws_other"
	if _, err := w.a.RenameFolder(ctx, stranger, id, "Mine"); !errors.Is(err, apperr.FolderNotFound) {
		t.Fatalf("another workspace's rename: %v; want folder_not_found", err)
	}
}

// The listing gives each entry its folder path, root first, and each
// folder its count of children; a parent filter lists one level.
func TestListTestsWithTheirFolders(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, sub := w.billingAndRefunds()
	w.testIn("Refund in 30 days", sub)
	root := "root"

	listed, _, more, err := w.a.ListTests(ctx, app.TestQuery{WorkspaceID: "ws", Limit: 10, IncludeFolder: true})
	if err != nil || more {
		t.Fatalf("list: more %v, %v", more, err)
	}
	byName := map[string]app.ListedEntry{}
	for _, e := range listed {
		byName[e.Name] = e
	}
	refund, refunds := byName["Refund in 30 days"], byName["Refunds"]
	if len(listed) != 4 || len(refund.FolderPath) != 2 || refund.FolderPath[0].Name != "Billing" || refund.FolderPath[1].Name != "Refunds" ||
		refunds.ChildrenCount != 1 || byName["Billing"].ChildrenCount != 1 {
		t.Fatalf("listed: %+v", listed)
	}
	atRoot, _, _, err := w.a.ListTests(ctx, app.TestQuery{WorkspaceID: "ws", Limit: 10, ParentFolder: &root, IncludeFolder: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range atRoot {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"Billing", "Opening hours"}) {
		t.Fatalf("at the root: %v", names)
	}
}

// The tests listing pages by cursor (folders first when asked, then the
// newest test first), and a cursor is bound to its listing's filters.
func TestPageTestsByCursor(t *testing.T) {
	w := newWorld(t) // with the test "Opening hours"
	ctx := context.Background()
	top := w.folder("Billing", "")
	for _, name := range []string{"A", "B", "C"} {
		w.clock.Add(time.Second)
		w.testIn(name, top)
	}
	q := app.TestQuery{WorkspaceID: "ws", Limit: 2, IncludeFolder: true, FoldersFirst: true}
	var names []string
	token := ""
	for range 10 {
		page, err := w.a.PageTests(ctx, q, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Rows {
			names = append(names, e.Name)
		}
		if !page.HasMore {
			break
		}
		token = *page.NextCursor
		other := q
		other.Search = "A"
		var v apperr.ValidationErrors
		if _, err := w.a.PageTests(ctx, other, token); !errors.As(err, &v) || len(v) != 1 || !slices.Equal(v[0].Loc, []any{"query", "cursor"}) {
			t.Fatalf("a cursor of another listing: %v", err)
		}
	}
	if want := []string{"Billing", "C", "B", "A", "Opening hours"}; !slices.Equal(names, want) {
		t.Fatalf("pages gave %v, want %v", names, want)
	}
}

// failingWrites refuses every write that touches subject, as a store that
// stops answering midway would.
type failingWrites struct {
	eventlog.Store
	subject string
}

var errWriteFailed = errors.New("the store did not answer")

func (s *failingWrites) Append(ctx context.Context, subject string, expected uint64, commandID string, ev eventlog.Event) (eventlog.Appended, error) {
	if subject == s.subject {
		return eventlog.Appended{}, errWriteFailed
	}
	return s.Store.Append(ctx, subject, expected, commandID, ev)
}

func (s *failingWrites) AppendAll(ctx context.Context, batch []eventlog.Write) ([]eventlog.Appended, error) {
	for _, w := range batch {
		if w.Subject == s.subject {
			return nil, errWriteFailed
		}
	}
	return s.Store.AppendAll(ctx, batch)
}

// A move is stored whole or not at all: one entry that cannot be written
// leaves every other where it was, and the move sent again moves them all.
func TestBulkMoveIsStoredWholeOrNotAtAll(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	into := w.folder("Billing", "")
	first, second, third := w.testIn("Invoice", ""), w.testIn("Refund", ""), w.testIn("Receipt", "")
	subject, _ := events.TestingSubject("ws", events.TestingKindTest, second)
	ports := w.p.Ports()
	ports.Testing = &failingWrites{Store: ports.Testing, subject: subject}
	failing := app.New(ports, w.a.ReadModel, slog.New(slog.DiscardHandler), w.clock.Now)
	keyed := w.c
	keyed.CommandID = "move-all"
	if _, err := failing.BulkMove(ctx, keyed, []string{first, second, third}, into); !errors.Is(err, errWriteFailed) {
		t.Fatalf("a move that could not be written: %v", err)
	}
	for _, id := range []string{first, second, third} {
		if p := w.parentOf(id); p != "" {
			t.Fatalf("%s moved to %q by a move that failed", id, p)
		}
	}
	if n, err := w.a.BulkMove(ctx, keyed, []string{first, second, third}, into); err != nil || n != 3 {
		t.Fatalf("the move sent again: %d %v", n, err)
	}
	for _, id := range []string{first, second, third} {
		if p := w.parentOf(id); p != into {
			t.Fatalf("%s is in %q after the move sent again, want %q", id, p, into)
		}
	}
}

// Two moves at once that would put folders inside each other, both
// decided before either is stored: A (holding A1) into B1 while B
// (holding B1) goes into A1, where neither touches a folder the other
// writes. One is stored; the other decides again on what it left, and is
// refused: the tree keeps a root above every folder.
func TestMovesAtOnceNeverPutFoldersInsideEachOther(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	a := w.folder("A", "")
	a1 := w.folder("A1", a)
	b := w.folder("B", "")
	b1 := w.folder("B1", b)
	ports := w.p.Ports()
	held := &eventlogtest.Held{Store: ports.Testing}
	held.Arm(2)
	ports.Testing = held
	mover := app.New(ports, w.a.ReadModel, slog.New(slog.DiscardHandler), w.clock.Now)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { _, errs[0] = mover.BulkMove(ctx, w.c, []string{a}, b1); t.Log("0", time.Since(start)) })
	wg.Go(func() { _, errs[1] = mover.BulkMove(ctx, w.c, []string{b}, a1); t.Log("1", time.Since(start)) })
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("the moves answered %v and %v; want one stored and one refused", errs[0], errs[1])
	}
	refused := errs[0]
	if refused == nil {
		refused = errs[1]
	}
	fieldErrorAt(t, refused, "body", "entity_ids", 0)
	for _, id := range []string{a, a1, b, b1} {
		seen := map[string]bool{}
		for cur := id; cur != ""; {
			if seen[cur] {
				t.Fatalf("folder %s sits below itself", cur)
			}
			seen[cur] = true
			f, _, err := w.a.Folders.Get(ctx, "ws", cur)
			if err != nil {
				t.Fatal(err)
			}
			cur = f.GetParentFolderId()
		}
	}
	tree, _, err := w.a.Trees.Get(ctx, "ws", events.FolderTreeID)
	if err != nil || tree.GetVersion() != 1 {
		t.Fatalf("the folder tree after one move: %v %v", tree, err)
	}
}

// countsAgree fails the test where a folder's own count of what it holds
// differs from the read model's.
func (w *world) countsAgree(folders ...string) {
	w.t.Helper()
	ctx := context.Background()
	for _, id := range folders {
		f, _, err := w.a.Folders.Get(ctx, "ws", id)
		if err != nil {
			w.t.Fatal(err)
		}
		listed, err := w.a.ReadModel.ChildCount(ctx, "ws", id)
		if err != nil {
			w.t.Fatal(err)
		}
		if f.ChildCount == nil || f.GetChildCount() != int64(listed) {
			w.t.Errorf("folder %s (%s) counts %v children; the read model lists %d", f.GetName(), id, f.ChildCount, listed)
		}
	}
}

// A folder's count follows every create, move, update and deletion that
// puts something in it or takes it out, a move of a folder that children
// leave at the same time included.
func TestAFolderCountsWhatItHolds(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	a, b := w.folder("A", ""), w.folder("B", "")
	c := w.folder("C", a)
	inA, inA2, inC := w.testIn("a1", a), w.testIn("a2", a), w.testIn("c1", c)
	w.countsAgree(a, b, c)

	if _, err := w.a.BulkMove(ctx, w.c, []string{inA, c, inC}, b); err != nil {
		t.Fatal(err)
	}
	w.countsAgree(a, b, c)
	if _, err := w.a.BulkMove(ctx, w.c, []string{inC}, ""); err != nil {
		t.Fatal(err)
	}
	w.countsAgree(a, b, c)
	if _, err := w.a.UpdateTest(ctx, w.c, inA2, []byte(`{"type":"llm","name":"a2","success_condition":"answers","parent_folder_id":"root"}`)); err != nil {
		t.Fatal(err)
	}
	if p := w.parentOf(inA2); p != "" {
		t.Fatalf("a test put in \"root\" by an update is in %q; the listings' root is \"\"", p)
	}
	if _, err := w.a.UpdateTest(ctx, w.c, inC, []byte(fmt.Sprintf(`{"type":"llm","name":"c1","success_condition":"answers","parent_folder_id":%q}`, c))); err != nil {
		t.Fatal(err)
	}
	w.countsAgree(a, b, c)
	if err := w.a.DeleteTest(ctx, w.c, inC); err != nil {
		t.Fatal(err)
	}
	w.countsAgree(a, b, c)
	if err := w.a.DeleteFolder(ctx, w.c, a, false); err != nil {
		t.Fatalf("deleting A, emptied: %v", err)
	}
	w.countsAgree(b, c)
	// A folder moved where it already is stores nothing.
	_, before, _ := w.a.Folders.Get(ctx, "ws", b)
	if _, err := w.a.BulkMove(ctx, w.c, []string{b}, ""); err != nil {
		t.Fatal(err)
	}
	if _, after, _ := w.a.Folders.Get(ctx, "ws", b); after != before {
		t.Fatalf("moving B where it is stored an event (sequence %d, was %d)", after, before)
	}
}

// A create into a folder and the folder's deletion, both decided before
// either is stored: one of them is refused, and no test is left in a
// deleted folder.
func TestACreateRacingItsFoldersDeletionLeavesNoTestOutside(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			folder := w.folder("Billing", "")
			ports := w.p.Ports()
			held := &eventlogtest.Held{Store: ports.Testing}
			held.Arm(2)
			ports.Testing = held
			racing := app.New(ports, w.a.ReadModel, slog.New(slog.DiscardHandler), w.clock.Now)
			var made *testingv1.Test
			var created, deleted error
			var wg sync.WaitGroup
			wg.Go(func() {
				made, created = racing.CreateTest(ctx, w.c, fmt.Appendf(nil, `{"type":"llm","name":"Invoice","success_condition":"answers","parent_folder_id":%q}`, folder))
			})
			wg.Go(func() { deleted = racing.DeleteFolder(ctx, w.c, folder, force) })
			wg.Wait()
			if created == nil {
				_, _, live := w.a.Tests.Get(ctx, "ws", made.GetTestId())
				_, _, gone := w.a.Folders.Get(ctx, "ws", folder)
				if live == nil && gone != nil {
					t.Fatalf("test %s is in folder %s, deleted (deletion: %v)", made.GetTestId(), folder, deleted)
				}
			}
			switch {
			case created != nil && deleted != nil:
				t.Fatalf("both refused: create %v, deletion %v", created, deleted)
			case created != nil:
				fieldErrorAt(t, created, "body", "parent_folder_id")
			case deleted != nil && !force:
				if apperr.KindOf(deleted) != apperr.Conflict {
					t.Fatalf("the deletion of a folder a test went into: %v", deleted)
				}
			case deleted != nil:
				t.Fatalf("a forced deletion refused: %v", deleted)
			}
		})
	}
}

// A replica whose read model has not yet seen a test created on another
// in a folder refuses to delete the folder without force (its count says
// one), and with force deletes nothing it cannot list: it answers 409.
func TestAFolderIsNotDeletedUnderATestAReplicaHasNotSeen(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	folder := w.folder("Billing", "")
	inside := w.testIn("Invoice", folder)
	behind := app.New(w.p.Ports(), memory.NewIndex(), slog.New(slog.DiscardHandler), w.clock.Now)
	for _, force := range []bool{false, true} {
		if err := behind.DeleteFolder(ctx, w.c, folder, force); apperr.KindOf(err) != apperr.Conflict {
			t.Fatalf("force=%v: deleting a folder holding a test the read model has not seen: %v", force, err)
		}
	}
	if p := w.parentOf(inside); p != folder {
		t.Fatalf("the test is in %q, want %q", p, folder)
	}
	if _, _, err := w.a.Folders.Get(ctx, "ws", folder); err != nil {
		t.Fatalf("the folder after refused deletions: %v", err)
	}
}

// batchesHeld holds every batch (AppendAll) until release is closed;
// single appends go through.
type batchesHeld struct {
	eventlog.Store
	arrived chan struct{} // closed at the first batch held
	once    sync.Once
	release chan struct{}
}

func (s *batchesHeld) AppendAll(ctx context.Context, batch []eventlog.Write) ([]eventlog.Appended, error) {
	s.once.Do(func() { close(s.arrived) })
	<-s.release
	return s.Store.AppendAll(ctx, batch)
}

// A move decided on what its deletion then removes, stored after it: it
// is refused as a move of what is not there is (422 at the entry), not
// answered 404 (for a folder: naming one that is there).
func TestAMoveOfWhatWasDeletedMeanwhileIsRefusedAt422(t *testing.T) {
	for _, kind := range []string{"test", "folder"} {
		t.Run(kind, func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			into := w.folder("Billing", "")
			moving := w.testIn("Invoice", "")
			del := func() error { return w.a.DeleteTest(ctx, w.c, moving) }
			if kind == "folder" {
				moving = w.folder("Refunds", "")
				del = func() error { return w.a.DeleteFolder(ctx, w.c, moving, true) }
			}
			ports := w.p.Ports()
			held := &batchesHeld{Store: ports.Testing, arrived: make(chan struct{}), release: make(chan struct{})}
			ports.Testing = held
			mover := app.New(ports, w.a.ReadModel, slog.New(slog.DiscardHandler), w.clock.Now)
			moved := make(chan error, 1)
			go func() { _, err := mover.BulkMove(ctx, w.c, []string{moving}, into); moved <- err }()
			<-held.arrived // the move has decided
			if err := del(); err != nil {
				t.Fatalf("the deletion: %v", err)
			}
			close(held.release)
			fieldErrorAt(t, <-moved, "body", "entity_ids", 0)
		})
	}
}
