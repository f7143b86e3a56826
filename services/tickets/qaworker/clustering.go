package qaworker

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// handleTickets clusters, once per batch, each agent with a ticket that
// needs clustering, handing it the newest states the batch carries (the
// read model may not hold them yet).
func (w *Worker) handleTickets(ctx context.Context, batch []jetstream.Msg) error {
	type agentKey struct{ ws, agent string }
	fresh := map[agentKey]map[string]*ticketsv1.Ticket{}
	var order []agentKey
	for _, m := range batch {
		ev, err := esproto.DecodeMsg(m)
		if err != nil {
			continue
		}
		t := app.StateOf(ev)
		if t == nil || !t.NeedsClustering || !domain.IsActive(t.Status) || t.DeletedAtUnixSecs != nil {
			continue
		}
		k := agentKey{t.WorkspaceId, t.AgentId}
		if fresh[k] == nil {
			fresh[k] = map[string]*ticketsv1.Ticket{}
			order = append(order, k)
		}
		fresh[k][t.TicketId] = t // later events of a ticket are newer
	}
	for _, k := range order {
		var ts []*ticketsv1.Ticket
		for _, t := range fresh[k] {
			ts = append(ts, t)
		}
		if err := w.App.ClusterAgent(ctx, k.ws, k.agent, ts); err != nil {
			if !permanent(err) {
				return err
			}
			w.Log.Warn("qa worker: clustering skipped", "agent_id", k.agent, "err", err)
		}
		w.handled.WithLabelValues("clustering", "clustered").Inc()
	}
	return nil
}
