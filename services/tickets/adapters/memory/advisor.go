package memory

import (
	"context"
	"sync"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Advisor is app.ClusterAdvisor in memory, for the clustering tests: a
// model whose judgement is a function, and which keeps the tickets it
// was asked about.
type Advisor struct {
	Model string // its Name
	Judge func(t domain.ClusterItem, candidates []domain.ClusterItem) (app.ClusterAdvice, error)

	mu    sync.Mutex
	asked []string
}

var _ app.ClusterAdvisor = (*Advisor)(nil)

// Name implements app.ClusterAdvisor.
func (a *Advisor) Name() string { return a.Model }

// Advise implements app.ClusterAdvisor: Judge's answer.
func (a *Advisor) Advise(_ context.Context, t domain.ClusterItem, candidates []domain.ClusterItem) (app.ClusterAdvice, error) {
	a.mu.Lock()
	a.asked = append(a.asked, t.ID)
	a.mu.Unlock()
	return a.Judge(t, candidates)
}

// Asked are the ids of the tickets it was asked about, in order.
func (a *Advisor) Asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}
