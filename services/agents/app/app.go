// Package app holds the agent use cases. Commands go through the
// aggregate repository (state from the agent's last event, optimistic
// concurrency, inline projection); listings read the Mongo read model.
package app

import (
	"log/slog"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/seal"
)

// App is the agents application.
type App struct {
	Agents    *aggregate.Repo[*agentsv1.Agent]
	ReadModel ReadModel
	Secrets   *aggregate.Repo[*agentsv1.WorkspaceSecret]
	SecretsRM SecretReadModel
	// Sealer seals secret values (key: agentconfig.SecretPurpose).
	Sealer *seal.Sealer
	// HostAllowed is the operator's outbound allow-list, for agents' own
	// model endpoints.
	HostAllowed func(host string) bool
	// Calls is when each agent was last called; nil: no call is known.
	Calls CallLog
	// Cursors signs the listings' cursors.
	Cursors *cursor.Codec
	Now     func() time.Time // the clock
}

// New wires the application over the AGENTS stream and the read models.
func New(store eventlog.Store, rm ReadModel, secrets SecretReadModel, sealer *seal.Sealer, hostAllowed func(string) bool, log *slog.Logger, now func() time.Time) *App {
	a := &App{ReadModel: rm, SecretsRM: secrets, Sealer: sealer, HostAllowed: hostAllowed, Now: now}
	env := aggregate.Env{Store: store, Log: log, Now: now}
	a.Agents = &aggregate.Repo[*agentsv1.Agent]{
		Env: env, Subject: events.AgentSubject,
		Gone:    func(s *agentsv1.Agent) bool { return s.DeletedAtUnix != nil },
		Touch:   func(s *agentsv1.Agent, t time.Time) { s.UpdatedAtUnix = t.Unix() },
		Project: rm.Apply, NotFound: apperr.AgentNotFound,
	}
	a.Secrets = &aggregate.Repo[*agentsv1.WorkspaceSecret]{
		Env: env, Subject: events.SecretSubject,
		Gone:    func(s *agentsv1.WorkspaceSecret) bool { return s.DeletedAtUnix != nil },
		Touch:   func(s *agentsv1.WorkspaceSecret, t time.Time) { s.UpdatedAtUnix = t.Unix() },
		Project: secrets.Apply, NotFound: apperr.SecretNotFound,
	}
	return a
}
