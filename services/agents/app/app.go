// Package app holds the agent use cases. Commands read the aggregate's
// current state from its last (state-carrying) event, decide, and append
// with optimistic concurrency; reads of one agent come from the event
// store too (one direct get), listings from the read model.
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/services/agents/adapters"
)

// App is the agents application.
type App struct {
	Store     *eventstore.Store
	ReadModel *adapters.ReadModel
	Log       *slog.Logger
	Now       func() time.Time
}

const conflictAttempts = 5

var errNotFound = httpx.NotFound("agent_not_found", "No agent with that id exists in this workspace.")

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Get returns a live agent of the workspace and its stream sequence. An
// agent of another workspace lives on another subject, so it is simply
// not found.
func (a *App) Get(ctx context.Context, workspaceID, agentID string) (*agentsv1.Agent, uint64, error) {
	subject, err := events.AgentSubject(workspaceID, agentID)
	if err != nil {
		return nil, 0, errNotFound
	}
	msg, seq, found, err := esproto.Last(ctx, a.Store, subject)
	if err != nil {
		return nil, 0, err
	}
	agent := adapters.StateOf(msg)
	if !found || agent == nil || agent.DeletedAtUnix != nil {
		return nil, 0, errNotFound
	}
	return agent, seq, nil
}

// record appends ev and projects its state inline; the durable projector
// catches up anything a crash in between leaves behind.
func (a *App) record(ctx context.Context, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message, state *agentsv1.Agent) (eventstore.Appended, error) {
	res, err := esproto.Append(ctx, a.Store, subject, expected, meta, ev)
	if err != nil {
		return res, err
	}
	if !res.Duplicate {
		if err := a.ReadModel.Apply(ctx, res.Seq, state); err != nil {
			a.Log.Warn("inline projection failed; the projector will catch up", "subject", subject, "err", err)
		}
	}
	return res, nil
}

// change loads an agent, lets mutate decide the next state, and appends
// it, retrying against fresh state on a concurrent change.
func (a *App) change(ctx context.Context, workspaceID, agentID string, mutate func(cur *agentsv1.Agent) (proto.Message, *agentsv1.Agent, error)) (*agentsv1.Agent, error) {
	var out *agentsv1.Agent
	err := eventstore.Retry(ctx, conflictAttempts, func() error {
		cur, seq, err := a.Get(ctx, workspaceID, agentID)
		if err != nil {
			return err
		}
		ev, next, err := mutate(proto.Clone(cur).(*agentsv1.Agent))
		if err != nil || ev == nil {
			out = cur
			return err
		}
		subject, _ := events.AgentSubject(workspaceID, agentID)
		if _, err := a.record(ctx, subject, seq, metaOf(ev), ev, next); err != nil {
			return err
		}
		out = next
		return nil
	})
	if errors.Is(err, eventstore.ErrConflict) {
		return nil, httpx.Conflict("concurrent_update", "The agent changed concurrently; retry.")
	}
	return out, err
}

func metaOf(ev proto.Message) *commonv1.EventMeta {
	if m, ok := ev.(interface{ GetMeta() *commonv1.EventMeta }); ok {
		return m.GetMeta()
	}
	return nil
}
