package aggregate

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
)

// renameAll is a command renaming every aggregate it is given, the first
// (the lead) to lead, the others to rest; one named "refuse" refuses it.
func renameAll(lead, rest string) MultiMutation[*agentsv1.Agent] {
	return func(next []*agentsv1.Agent, metas []*commonv1.EventMeta) ([]proto.Message, error) {
		evs := make([]proto.Message, len(next))
		for i, a := range next {
			if a.Name == "refuse" {
				return nil, errConflict
			}
			a.Name = rest
			if i == 0 {
				a.Name = lead
			}
			evs[i] = &agentsv1.AgentUpdated{Meta: metas[i], Agent: a}
		}
		return evs, nil
	}
}

func names(t *testing.T, r *Repo[*agentsv1.Agent], ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		a, _, err := r.Get(context.Background(), "ws", id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a.GetName())
	}
	return out
}

func testChangeAllStoresEveryChangeOrNone(t *testing.T, open openStore) {
	r, projected := newRepo(t, open)
	ctx := context.Background()
	for _, id := range []string{"agent_1", "agent_2", "agent_3"} {
		create(t, r, id, "")
	}
	projected.Clear()
	lead, err := r.ChangeAll(ctx, "ws", "", []string{"agent_1", "agent_2", "agent_3"}, renameAll("lead", "rest"))
	if err != nil || lead.GetName() != "lead" || lead.GetUpdatedAtUnix() == 0 {
		t.Fatalf("change all: %v %v", lead, err)
	}
	if got := names(t, r, "agent_1", "agent_2", "agent_3"); got[0] != "lead" || got[1] != "rest" || got[2] != "rest" {
		t.Fatalf("names after the command: %v", got)
	}
	for _, id := range []string{"agent_1", "agent_2", "agent_3"} {
		if _, ok := projected.Load(id); !ok {
			t.Fatalf("%s was not projected inline", id)
		}
	}
	// One refusing or missing: nothing changes.
	if _, err := r.Update(ctx, "ws", "agent_3", "", func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		next.Name = "refuse"
		return &agentsv1.AgentUpdated{Meta: meta, Agent: next}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ChangeAll(ctx, "ws", "", []string{"agent_1", "agent_2", "agent_3"}, renameAll("x", "y")); !errors.Is(err, errConflict) {
		t.Fatalf("a command its mutation refuses: %v", err)
	}
	if _, err := r.ChangeAll(ctx, "ws", "", []string{"agent_1", "agent_missing"}, renameAll("x", "y")); !errors.Is(err, errNotFound) {
		t.Fatalf("a command over a missing aggregate: %v", err)
	}
	if got := names(t, r, "agent_1", "agent_2", "agent_3"); got[0] != "lead" || got[1] != "rest" || got[2] != "refuse" {
		t.Fatalf("a refused command changed something: %v", got)
	}
}

// A writer that changes one of the aggregates between the command's read
// and its append makes it run again on what that writer left; the
// aggregates the command would have changed first are not changed twice
// or half.
func testChangeAllRetriesAgainstFreshStates(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	ctx := context.Background()
	create(t, r, "agent_1", "")
	create(t, r, "agent_2", "")
	runs := 0
	_, err := r.ChangeAll(ctx, "ws", "", []string{"agent_1", "agent_2"}, func(next []*agentsv1.Agent, metas []*commonv1.EventMeta) ([]proto.Message, error) {
		runs++
		if runs == 1 { // someone renames agent_2 meanwhile
			if _, err := r.Update(ctx, "ws", "agent_2", "", func(n *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
				n.Name = "interloper"
				return &agentsv1.AgentUpdated{Meta: meta, Agent: n}, nil
			}); err != nil {
				return nil, err
			}
		}
		evs := make([]proto.Message, len(next))
		for i, a := range next {
			a.Name += "+mine"
			evs[i] = &agentsv1.AgentUpdated{Meta: metas[i], Agent: a}
		}
		return evs, nil
	})
	if err != nil || runs != 2 {
		t.Fatalf("runs=%d err=%v", runs, err)
	}
	if got := names(t, r, "agent_1", "agent_2"); got[0] != "first+mine" || got[1] != "interloper+mine" {
		t.Fatalf("names: %v", got)
	}
}

func testKeyedChangeAllReplay(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	ctx := keyed("digest-1")
	create(t, r, "agent_1", "")
	create(t, r, "agent_2", "")
	ids := []string{"agent_1", "agent_2"}
	first, err := r.ChangeAll(ctx, "ws", "cmd-1", ids, renameAll("lead", "rest"))
	if err != nil {
		t.Fatal(err)
	}
	// Sent again as it is, and after the lead changed since: the first
	// result, nothing changed again.
	again, err := r.ChangeAll(ctx, "ws", "cmd-1", ids, renameAll("lead 2", "rest 2"))
	if err != nil || !proto.Equal(first, again) {
		t.Fatalf("replay: %v %v, want %v", again, err, first)
	}
	if _, err := r.Update(ctx, "ws", "agent_1", "", func(n *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		n.Name = "refuse"
		return &agentsv1.AgentUpdated{Meta: meta, Agent: n}, nil
	}); err != nil {
		t.Fatal(err)
	}
	later, err := r.ChangeAll(ctx, "ws", "cmd-1", ids, renameAll("lead 3", "rest 3"))
	if err != nil || later.GetName() != "lead" {
		t.Fatalf("replay after the lead changed: %v %v", later, err)
	}
	if got := names(t, r, "agent_1", "agent_2"); got[0] != "refuse" || got[1] != "rest" {
		t.Fatalf("a replay changed something: %v", got)
	}
	// The key with another request is refused.
	_, err = r.ChangeAll(keyed("digest-2"), "ws", "cmd-1", ids, renameAll("x", "y"))
	wantReused(t, "the key of another request", err)
}

// renameStep is a step renaming agent id to name under commandID.
func renameStep(t *testing.T, r *Repo[*agentsv1.Agent], id, commandID, name string) *Step {
	t.Helper()
	s, err := r.Step("ws", id, commandID, func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		if next.Name == name {
			return nil, nil
		}
		next.Name = name
		return &agentsv1.AgentUpdated{Meta: meta, Agent: next}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A keyed command over several aggregates sent again changes nothing
// again: at once, and after every aggregate it changed has changed since
// (its events found by their command ids); with another request, the key
// is refused.
func testKeyedChangeManyReplay(t *testing.T, open openStore) {
	r, projected := newRepo(t, open)
	ctx := keyed("digest-1")
	create(t, r, "agent_1", "")
	create(t, r, "agent_2", "")
	projected.Clear()
	steps := func(name string) []*Step {
		return []*Step{renameStep(t, r, "agent_1", CommandFor("cmd-1", "agent_1"), name), renameStep(t, r, "agent_2", CommandFor("cmd-1", "agent_2"), name)}
	}
	if err := ChangeMany(ctx, r.Env, "ws", steps("moved")); err != nil {
		t.Fatal(err)
	}
	if _, ok := projected.Load("agent_2"); !ok {
		t.Fatal("a step's change was not projected inline")
	}
	if err := ChangeMany(ctx, r.Env, "ws", steps("again")); err != nil {
		t.Fatalf("sent again at once: %v", err)
	}
	for _, id := range []string{"agent_1", "agent_2"} {
		if err := ChangeMany(context.Background(), r.Env, "ws", []*Step{renameStep(t, r, id, "", "changed since")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ChangeMany(ctx, r.Env, "ws", steps("again")); err != nil {
		t.Fatalf("sent again after its aggregates changed: %v", err)
	}
	if got := names(t, r, "agent_1", "agent_2"); got[0] != "changed since" || got[1] != "changed since" {
		t.Fatalf("a replay changed something: %v", got)
	}
	wantReused(t, "the key of another request", ChangeMany(keyed("digest-2"), r.Env, "ws", steps("other")))
}

// A command that changes other aggregates with its own (ChangeWith,
// CreateWith) stores them in one batch: the others' steps each land, a
// StepIfExists on a missing or deleted aggregate is left out, a Step on
// one refuses the whole command; sent again under its key, it answers the
// first result and changes the others nothing again.
func testChangeWithStoresTheOthersWithIt(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	ctx := keyed("digest-1")
	create(t, r, "agent_1", "")
	create(t, r, "agent_2", "")
	create(t, r, "agent_3", "")
	if _, err := r.Update(context.Background(), "ws", "agent_3", "", deleteAgent); err != nil {
		t.Fatal(err)
	}
	rename := func(name string) Mutation[*agentsv1.Agent] {
		return func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
			next.Name = name
			return &agentsv1.AgentUpdated{Meta: meta, Agent: next}, nil
		}
	}
	others := func(commandID, name string, ifExists ...string) Also[*agentsv1.Agent] {
		return func(*agentsv1.Agent) ([]*Step, error) {
			steps := []*Step{renameStep(t, r, "agent_2", CommandFor(commandID, "agent_2"), name)}
			for _, id := range ifExists {
				s, err := r.StepIfExists("ws", id, CommandFor(commandID, id), rename(name))
				if err != nil {
					return nil, err
				}
				steps = append(steps, s)
			}
			return steps, nil
		}
	}

	got, err := r.UpdateWith(ctx, "ws", "agent_1", "cmd-1", rename("lead"), others("cmd-1", "follow", "agent_3", "agent_9"))
	if err != nil || got.Name != "lead" {
		t.Fatalf("the update: %v %v", got.GetName(), err)
	}
	if n := names(t, r, "agent_1", "agent_2"); n[0] != "lead" || n[1] != "follow" {
		t.Fatalf("after the update: %v", n)
	}
	if a, _, err := r.Get(context.Background(), "ws", "agent_3"); !errors.Is(err, errNotFound) {
		t.Fatalf("a StepIfExists revived a deleted aggregate: %v %v", a, err)
	}
	if _, err := r.Update(context.Background(), "ws", "agent_2", "", rename("changed since")); err != nil {
		t.Fatal(err)
	}
	if again, err := r.UpdateWith(ctx, "ws", "agent_1", "cmd-1", rename("lead"), others("cmd-1", "follow")); err != nil || again.Name != "lead" {
		t.Fatalf("sent again: %v %v", again.GetName(), err)
	}
	if n := names(t, r, "agent_2"); n[0] != "changed since" {
		t.Fatalf("a replay changed another aggregate again: %v", n)
	}

	mustDeleted := func(*agentsv1.Agent) ([]*Step, error) {
		return []*Step{renameStep(t, r, "agent_3", "", "revived")}, nil
	}
	if _, err := r.UpdateWith(context.Background(), "ws", "agent_1", "", rename("refused"), mustDeleted); !errors.Is(err, errNotFound) {
		t.Fatalf("a Step on a deleted aggregate: %v, want its NotFound", err)
	}
	if n := names(t, r, "agent_1"); n[0] != "lead" {
		t.Fatalf("a refused command stored its own change: %v", n)
	}

	meta := esproto.Meta(ctx, "ws", "cmd-2", time.Now())
	made := &agentsv1.Agent{AgentId: "agent_5", WorkspaceId: "ws", Name: "made"}
	steps, _ := others("cmd-2", "by the create")(nil)
	if got, replayed, err := r.CreateWith(ctx, "ws", "agent_5", meta, &agentsv1.AgentCreated{Meta: meta, Agent: made}, made, steps); err != nil || replayed || got.Name != "made" {
		t.Fatalf("the create: %v %v %v", got.GetName(), replayed, err)
	}
	if n := names(t, r, "agent_2"); n[0] != "by the create" {
		t.Fatalf("the create's other change: %v", n)
	}
	steps, _ = others("cmd-2", "by the retry")(nil)
	other := &agentsv1.Agent{AgentId: "agent_5", WorkspaceId: "ws", Name: "retry"}
	if got, replayed, err := r.CreateWith(ctx, "ws", "agent_5", meta, &agentsv1.AgentCreated{Meta: meta, Agent: other}, other, steps); err != nil || !replayed || got.Name != "made" {
		t.Fatalf("the create sent again: %v %v %v", got.GetName(), replayed, err)
	}
	if n := names(t, r, "agent_2"); n[0] != "by the create" {
		t.Fatalf("the create sent again changed another aggregate: %v", n)
	}
}
