// Package readmodeltest is the conformance suite of app.ReadModel: every
// implementation must answer every listing (and its count) exactly as the
// reference does (all documents' newest states, filtered, then sorted by
// position), through creates, updates, revocations and stale redeliveries.
package readmodeltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// reference is the meaning of the read model: the newest state of every
// document, and listings computed from all of them.
type reference struct {
	latest map[string]event // kind/workspace/id → newest
}

type event struct {
	seq uint64
	doc app.Doc
}

// nameOf names a document: ids are unique per kind within a workspace.
func nameOf(doc app.Doc) string {
	p := doc.Position()
	return fmt.Sprintf("%T/%s/%s", doc, p.WorkspaceID, p.ID)
}

func (r *reference) put(seq uint64, doc app.Doc) {
	if prev, ok := r.latest[nameOf(doc)]; !ok || prev.seq < seq {
		r.latest[nameOf(doc)] = event{seq, doc}
	}
}

// listing is every document of type T that keep selects, by position.
func listing[T app.Doc](r *reference, keep func(T) bool) []T {
	var out []T
	for _, e := range r.latest {
		if d, ok := e.doc.(T); ok && keep(d) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b T) int { return a.Position().Compare(b.Position()) })
	return out
}

// history makes identity documents whose fields collide often: a few
// workspaces, each with the same admin account id (as every workspace
// has), creation times shared by several documents (the nanosecond orders
// them against their ids, or ties too and the id breaks it),
// and keys that are updated and revoked. Key and user ids are unique
// across workspaces, as the app derives them from the workspace.
type history struct {
	rng      *rand.Rand
	n        int
	seq      uint64
	accounts map[string][]string // workspace → account ids
	keys     []app.KeyDoc        // newest state of every key, revoked included
}

var workspaces = []string{"ws_1", "ws_2", "ws_3"}

func newHistory(seed uint64) *history {
	h := &history{rng: rand.New(rand.NewPCG(seed, seed+1)), accounts: map[string][]string{}}
	for _, ws := range workspaces {
		h.accounts[ws] = []string{"sa_admin"}
	}
	return h
}

func (h *history) pick(xs ...string) string { return xs[h.rng.IntN(len(xs))] }

func (h *history) created() int64 { return 1_700_000_000 + int64(h.rng.IntN(20)) }

// nanos is a creation's nanosecond within second: several share one (then
// the id orders), and some were made before it was kept (0).
func (h *history) nanos(second int64) int64 {
	if h.rng.IntN(4) == 0 {
		return 0
	}
	return second*1e9 + int64(h.rng.IntN(3))*400
}

func (h *history) ptr() *int64 {
	if h.rng.IntN(2) == 0 {
		return nil
	}
	v := int64(1 + h.rng.IntN(100))
	return &v
}

// next is the next event of the history.
func (h *history) next() event {
	h.n++
	h.seq++
	ws := h.pick(workspaces...)
	var live []int
	for i, k := range h.keys {
		if !k.Revoked {
			live = append(live, i)
		}
	}
	switch r := h.rng.IntN(10); {
	case r == 0 && h.rng.IntN(4) == 0:
		// The admin account, created in each workspace; the read model may
		// see it again.
		return event{h.seq, app.AccountDoc{ID: "sa_admin", WorkspaceID: ws, Name: "admin", Email: "sa_admin@x", CreatedAtUnix: 1_700_000_000}}
	case r == 0:
		id := fmt.Sprintf("sa_%02d_%d", h.rng.IntN(100), h.n)
		h.accounts[ws] = append(h.accounts[ws], id)
		created := h.created()
		return event{h.seq, app.AccountDoc{ID: id, WorkspaceID: ws, Name: h.pick("bot", "ci", "ops"), Email: id + "@x", CreatedAtUnix: created,
			CreatedNanos: h.nanos(created)}}
	case r == 1:
		id := fmt.Sprintf("user_%02d_%d", h.rng.IntN(100), h.n)
		created := h.created()
		return event{h.seq, app.UserDoc{ID: id, WorkspaceID: ws, Email: id + "@example.com", FirstName: h.pick("Ada", "Bo"),
			Role: h.pick(app.RoleAdmin, app.RoleMember), CreatedAtUnix: created, CreatedNanos: h.nanos(created)}}
	case r < 5 || len(live) == 0:
		k := app.KeyDoc{
			ID: fmt.Sprintf("key_%02d_%d", h.rng.IntN(100), h.n), WorkspaceID: ws, ServiceAccountUserID: h.pick(h.accounts[ws]...),
			Name: "key", Hint: "abcd", HashedKey: fmt.Sprintf("%064x", h.n), Permissions: []string{h.pick("all", "tickets_read")},
			ExpiresAtUnix: h.ptr(), CreatedAtUnix: h.created(), RateLimitPerMinute: h.ptr(),
		}
		k.CreatedNanos = h.nanos(k.CreatedAtUnix)
		h.keys = append(h.keys, k)
		return event{h.seq, k}
	}
	// Update or revoke a live key (a revoked key never changes again).
	i := live[h.rng.IntN(len(live))]
	k := h.keys[i]
	switch h.rng.IntN(4) {
	case 0:
		k.Revoked = true
	case 1:
		k.IsDisabled = !k.IsDisabled
	case 2:
		k.Name, k.Permissions = h.pick("renamed", "other"), []string{"tickets_read", "tickets_write"}
	default:
		k.AllowedIPs, k.RateLimitPerHour = []string{"10.0.0.0/8"}, h.ptr()
	}
	h.keys[i] = k
	return event{h.seq, k}
}

// Run checks the read model open makes (a fresh, empty one each call)
// over a history of n events (a slow store may take fewer).
func Run(t *testing.T, n int, open func(t *testing.T) app.ReadModel) {
	ctx := context.Background()
	t.Run("listings equal the reference through a live history", func(t *testing.T) {
		rm, ref, h := open(t), &reference{latest: map[string]event{}}, newHistory(1)
		var log []event
		put := func(e event) {
			t.Helper()
			if err := rm.Put(ctx, e.seq, e.doc); err != nil {
				t.Fatal(err)
			}
			ref.put(e.seq, e.doc)
		}
		for i := range n {
			e := h.next()
			log = append(log, e)
			put(e)
			// Redeliveries of earlier events, mostly stale, change nothing
			// the reference does not.
			if h.rng.IntN(3) == 0 {
				put(log[h.rng.IntN(len(log))])
			}
			if (i+1)%max(1, n/4) == 0 {
				check(t, rm, ref, h)
			}
		}
		check(t, rm, ref, h)

		// A read model built from each document's last event only (what a
		// start replays), in any order, lists the same: keys first seen
		// revoked stay hidden.
		fresh, last := open(t), make([]event, 0, len(ref.latest))
		for _, e := range ref.latest {
			last = append(last, e)
		}
		// Sorted first so that the seeded shuffle, not map order, decides.
		slices.SortFunc(last, func(a, b event) int { return nameCompare(a.doc, b.doc) })
		h.rng.Shuffle(len(last), func(i, j int) { last[i], last[j] = last[j], last[i] })
		for _, e := range last {
			if err := fresh.Put(ctx, e.seq, e.doc); err != nil {
				t.Fatal(err)
			}
		}
		check(t, fresh, ref, h)
	})

	t.Run("concurrent writers in any order converge", func(t *testing.T) {
		rm, ref, h := open(t), &reference{latest: map[string]event{}}, newHistory(2)
		var log []event
		for range 40 {
			e := h.next()
			log = append(log, e)
			ref.put(e.seq, e.doc)
		}
		// Each writer delivers the whole history in its own order while a
		// reader lists: every event arrives several times, mostly stale.
		errs := make(chan error, 5)
		var wg sync.WaitGroup
		for w := range 4 {
			order := slices.Clone(log)
			rand.New(rand.NewPCG(uint64(w), 9)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			wg.Go(func() {
				for _, e := range order {
					if err := rm.Put(ctx, e.seq, e.doc); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Go(func() {
			for range 10 {
				if _, err := rm.ListKeys(ctx, "ws_1", ""); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		check(t, rm, ref, h)
	})

	t.Run("a document keeps no reference to its caller's slices", func(t *testing.T) {
		rm := open(t)
		perms := []string{"tickets_read"}
		if err := rm.Put(ctx, 1, app.KeyDoc{ID: "key_1", WorkspaceID: "ws_1", ServiceAccountUserID: "sa_1", Permissions: perms}); err != nil {
			t.Fatal(err)
		}
		perms[0] = "all"
		keys, err := rm.ListKeys(ctx, "ws_1", "sa_1")
		if err != nil || len(keys) != 1 || keys[0].Permissions[0] != "tickets_read" {
			t.Fatalf("ListKeys = %+v, %v", keys, err)
		}
	})
}

func nameCompare(a, b app.Doc) int {
	switch x, y := nameOf(a), nameOf(b); {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// check compares every listing of every workspace (and of an unknown one)
// with the reference.
func check(t *testing.T, rm app.ReadModel, ref *reference, h *history) {
	t.Helper()
	ctx := context.Background()
	for _, ws := range append(slices.Clone(workspaces), "ws_empty") {
		inWS := func(d app.Doc) bool { return d.Position().WorkspaceID == ws }
		accts, err := rm.ListAccounts(ctx, ws)
		same(t, "ListAccounts("+ws+")", accts, err, listing(ref, func(d app.AccountDoc) bool { return inWS(d) }))
		users, err := rm.ListUsers(ctx, ws)
		same(t, "ListUsers("+ws+")", users, err, listing(ref, func(d app.UserDoc) bool { return inWS(d) }))
		counted(t, rm, ws, app.Accounts, len(listing(ref, func(d app.AccountDoc) bool { return inWS(d) })))
		counted(t, rm, ws, app.Members, len(listing(ref, func(d app.UserDoc) bool { return inWS(d) })))
		counted(t, rm, ws, app.LiveKeys, len(listing(ref, func(d app.KeyDoc) bool { return inWS(d) && !d.Revoked })))
		for _, acct := range append(slices.Clone(h.accounts[ws]), "", "sa_nobody") {
			keys, err := rm.ListKeys(ctx, ws, acct)
			same(t, fmt.Sprintf("ListKeys(%s, %q)", ws, acct), keys, err, listing(ref, func(d app.KeyDoc) bool {
				return inWS(d) && !d.Revoked && (acct == "" || d.ServiceAccountUserID == acct)
			}))
		}
	}
}

// counted checks that Count says a workspace's listing l holds want.
func counted(t *testing.T, rm app.ReadModel, ws string, l app.Listing, want int) {
	t.Helper()
	if n, err := rm.Count(context.Background(), ws, l); err != nil || n != want {
		t.Fatalf("Count(%s, %d) = %d, %v; want %d", ws, l, n, err, want)
	}
}

// same compares a listing field by field; an empty list is a nil one.
func same[T app.Doc](t *testing.T, what string, got []T, err error, want []T) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	norm := func(ds []T) []T {
		out := slices.Clone(ds)
		for i, d := range out {
			if k, ok := any(d).(app.KeyDoc); ok {
				k.Permissions, k.AllowedIPs = nilIfEmpty(k.Permissions), nilIfEmpty(k.AllowedIPs)
				out[i] = any(k).(T)
			}
		}
		return out
	}
	if !reflect.DeepEqual(norm(got), norm(want)) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
