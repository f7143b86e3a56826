package aggregate

import (
	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// AgentReader reads the agents of the AGENTS stream (store) for a service
// that uses agents it does not own: testing runs them, tickets are raised
// on them. Get answers a live agent, or apperr.AgentNotFound for a
// missing, deleted or other workspace's one. It changes nothing.
func AgentReader(store eventlog.Store) *Repo[*agentsv1.Agent] {
	return &Repo[*agentsv1.Agent]{Env: Env{Store: store}, Subject: events.AgentSubject,
		Gone: func(a *agentsv1.Agent) bool { return a.DeletedAtUnix != nil }, NotFound: apperr.AgentNotFound}
}
