package adapters

import (
	"context"
	"fmt"
	"sync"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/seal"
)

// Secrets opens workspace secrets for the runners: the secret's last event
// on stream AGENTS, opened with the key the agents service sealed it with.
// An opened value is kept for TTL, so an invocation of thousands of runs
// reads it once; a rotation reaches runs within TTL.
type Secrets struct {
	Store  *eventstore.Store // stream AGENTS
	Sealer *seal.Sealer
	TTL    time.Duration

	mu    sync.Mutex
	cache map[string]openedSecret
}

type openedSecret struct {
	value   string
	expires time.Time
}

// Open answers the value of the workspace's secret.
func (s *Secrets) Open(ctx context.Context, workspaceID, secretID string) (string, error) {
	key := agentconfig.SecretOwner(workspaceID, secretID)
	s.mu.Lock()
	if c, ok := s.cache[key]; ok && time.Now().Before(c.expires) {
		s.mu.Unlock()
		return c.value, nil
	}
	s.mu.Unlock()
	subject, err := events.SecretSubject(workspaceID, secretID)
	if err != nil {
		return "", fmt.Errorf("workspace secret %q: not an id", secretID)
	}
	msg, _, found, err := esproto.Last(ctx, s.Store, subject)
	if err != nil {
		return "", fmt.Errorf("workspace secret %s: %w", secretID, err)
	}
	state, ok := events.StateOf[*agentsv1.WorkspaceSecret](msg)
	if ok && state.DeletedAtUnix != nil {
		return "", fmt.Errorf("workspace secret %s was deleted", secretID)
	}
	if !found || !ok {
		return "", fmt.Errorf("no workspace secret %s in this workspace", secretID)
	}
	plain, err := s.Sealer.Open(key, state.GetSealedValue())
	if err != nil {
		return "", fmt.Errorf("workspace secret %s: %w", secretID, err)
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	s.mu.Lock()
	if s.cache == nil || len(s.cache) > 10_000 {
		s.cache = map[string]openedSecret{}
	}
	s.cache[key] = openedSecret{value: string(plain), expires: time.Now().Add(ttl)}
	s.mu.Unlock()
	return string(plain), nil
}
