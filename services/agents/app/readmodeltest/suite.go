// Package readmodeltest is the conformance suite of the agent listing's
// read model: every implementation (MongoDB, memory) answers each query
// with the same agents in the same order, page after page.
package readmodeltest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// fixture is two workspaces of agents with repeated creation times and
// names differing in case only, so ties are broken by id. Within a second,
// the nanosecond orders agents against their ids (some were made before
// it was kept: 0).
func fixture() []*agentsv1.Agent {
	var out []*agentsv1.Agent
	names := []string{"Refunds", "refunds", "Billing", "Alpha", "zeta", "Refunds desk"}
	for i := range 30 {
		a := &agentsv1.Agent{
			AgentId: fmt.Sprintf("agent_%02d", i), WorkspaceId: "ws_a", Name: names[i%len(names)],
			CreatedAtUnix: 1_700_000_000 + int64(i/3), CreatedByUserId: []string{"user_1", "user_2"}[i%2],
			CreatedAtUnixNanos: []int64{0, (1_700_000_000+int64(i/3))*1e9 + int64(900-i*10)}[min(i%4, 1)],
			Tags:               [][]string{{"prod"}, {"staging"}, {"prod", "eu"}, nil}[i%4],
		}
		if i%5 == 0 {
			a.PlatformSettingsJson = []byte(`{"archived":true}`)
		}
		out = append(out, a)
	}
	out = append(out, &agentsv1.Agent{AgentId: "agent_other", WorkspaceId: "ws_b", Name: "Refunds", CreatedAtUnix: 1_700_000_000})
	return out
}

func queries() []app.Query {
	yes, no := true, false
	return []app.Query{
		{WorkspaceID: "ws_a", SortBy: "created_at", Descending: true},
		{WorkspaceID: "ws_a", SortBy: "created_at"},
		{WorkspaceID: "ws_a", SortBy: "name"},
		{WorkspaceID: "ws_a", SortBy: "name", Descending: true},
		{WorkspaceID: "ws_a", SortBy: "created_at", Descending: true, Search: "REFUNDS"},
		{WorkspaceID: "ws_a", SortBy: "name", Tags: []string{"eu", "staging"}},
		{WorkspaceID: "ws_a", SortBy: "created_at", Descending: true, Archived: &yes},
		{WorkspaceID: "ws_a", SortBy: "created_at", Descending: true, Archived: &no, CreatedBy: "user_2"},
		{WorkspaceID: "ws_b", SortBy: "created_at", Descending: true},
		{WorkspaceID: "ws_none", SortBy: "name"},
	}
}

// reference is a query's whole answer, by brute force over the live
// agents: what every read model must page through.
func reference(live []*agentsv1.Agent, q app.Query) []string {
	var docs []app.AgentDoc
	for _, a := range live {
		d := app.DocOf(a)
		if d.WorkspaceID != q.WorkspaceID ||
			q.Search != "" && !strings.Contains(strings.ToLower(d.Name), strings.ToLower(q.Search)) ||
			len(q.Tags) > 0 && !slices.ContainsFunc(d.Tags, func(t string) bool { return slices.Contains(q.Tags, t) }) ||
			q.Archived != nil && d.Archived != *q.Archived ||
			q.CreatedBy != "" && d.CreatedBy != q.CreatedBy {
			continue
		}
		docs = append(docs, d)
	}
	sort.Slice(docs, func(i, j int) bool {
		a, b := docs[i], docs[j]
		less := app.CompareCreated(a, b) < 0
		if q.SortBy == "name" {
			less = a.NameLower < b.NameLower || a.NameLower == b.NameLower && a.ID < b.ID
		}
		return less != q.Descending
	})
	return ids(docs)
}

// Run checks that the read model open returns pages through every query
// as the reference does, in pages of several sizes.
func Run(t *testing.T, open func(*testing.T) app.ReadModel) {
	ctx := context.Background()
	rm := open(t)
	for i, a := range fixture() {
		if err := rm.Apply(ctx, uint64(i+1), a); err != nil {
			t.Fatal(err)
		}
	}
	// A deleted agent leaves every listing; an older state is ignored; a
	// renamed agent moves in the name order and leaves a search for its
	// old name.
	renamed := fixture()[12]
	renamed.Name = "Aardvark"
	if err := rm.Apply(ctx, 101, renamed); err != nil {
		t.Fatal(err)
	}
	gone := fixture()[7]
	deleted := int64(1)
	gone.DeletedAtUnix = &deleted
	stale := fixture()[8]
	stale.Name = "stale"
	if err := rm.Apply(ctx, 100, gone); err != nil {
		t.Fatal(err)
	}
	if err := rm.Apply(ctx, 1, stale); err != nil {
		t.Fatal(err)
	}
	live := slices.DeleteFunc(fixture(), func(a *agentsv1.Agent) bool { return a.AgentId == gone.AgentId })
	live[slices.IndexFunc(live, func(a *agentsv1.Agent) bool { return a.AgentId == renamed.AgentId })] = renamed
	for _, q := range queries() {
		expected := reference(live, q)
		if len(expected) == 0 && q.WorkspaceID != "ws_none" {
			t.Fatalf("the fixture selects nothing for %+v", q)
		}
		for _, size := range []int{1, 4, 1000} {
			var got []string
			page := q
			page.Limit = size
			for {
				docs, err := rm.List(ctx, page)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range docs {
					got = append(got, d.ID)
				}
				if len(docs) < size {
					break
				}
				pos := app.PositionOf(page, docs[len(docs)-1])
				page.After = &pos
			}
			if !slices.Equal(got, expected) {
				t.Errorf("%+v in pages of %d:\n got  %v\n want %v", q, size, got, expected)
			}
		}
	}
}

func ids(docs []app.AgentDoc) []string {
	return testkit.IDs(docs, func(d app.AgentDoc) string { return d.ID })
}
