package qaworker

import (
	"context"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// handleTickets clusters, once per batch, each agent with a ticket that
// needs clustering. The states the batch carries go into the read model
// first (it keeps the newest by stream sequence), so the pass sees them
// even before the read model's own follower does.
func (w *Worker) handleTickets(ctx context.Context, batch []app.QAMessage) error {
	type agentKey struct{ ws, agent string }
	seen := map[agentKey]string{} // the traceparent of the ticket that asked
	var order []agentKey
	for _, m := range batch {
		if m.Err != nil {
			continue
		}
		t, ok := events.StateOf[*ticketsv1.Ticket](m.Event)
		if !ok || !t.NeedsClustering || !domain.IsActive(t.Status) || t.DeletedAtUnixSecs != nil {
			continue
		}
		if err := w.App.ReadModel.Put(ctx, m.Seq, t); err != nil {
			return err
		}
		k := agentKey{t.WorkspaceId, t.AgentId}
		if _, asked := seen[k]; !asked {
			seen[k] = m.Traceparent
			order = append(order, k)
		}
	}
	for _, k := range order {
		err := inTrace(ctx, seen[k], "qa clustering", func(ctx context.Context) error {
			err := w.App.ClusterAgent(ctx, k.ws, k.agent)
			if permanent(err) {
				w.Log.WarnContext(ctx, "qa worker: clustering skipped", "agent_id", k.agent, "err", err)
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		w.handled.WithLabelValues("clustering", "clustered").Inc()
	}
	return nil
}
