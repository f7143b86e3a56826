package app

import (
	"context"
	"slices"

	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// ClusterAdvisor is a model that clusters instead of the offline rules:
// shown a ticket that needs clustering and the agent's active tickets
// most like it, it says which of them report the same problem and the
// ticket's issue type. Exact duplicates are still found by the rules.
type ClusterAdvisor interface {
	// Advise judges t against candidates. IssueType is "" when the text
	// does not make it clear; Reason says why, in a sentence.
	Advise(ctx context.Context, t domain.ClusterItem, candidates []domain.ClusterItem) (ClusterAdvice, error)
	// Name identifies the model on the events it decided, e.g.
	// "openai/gpt-4o-mini".
	Name() string
}

// ClusterAdvice is a model's judgement of one ticket.
type ClusterAdvice struct {
	SimilarTo []string // ids among the candidates
	IssueType string   // one of domain.IssueTypes, or ""
	Reason    string
}

// maxCandidates bounds the tickets a model is shown with each one it
// judges: the prompt stays small however many the agent has.
const maxCandidates = 20

// decision is what clustering decided for one ticket and by what.
type decision struct {
	advice    *ClusterAdvice // the model's, nil when the rules decided
	decidedBy string
	fallback  string // why the rules decided although a model is configured
}

// advise asks the advisor about every ticket that needs clustering and
// regroups the plan's groups by its answers. A ticket the model could not
// judge keeps what the rules decided, and says so.
func (a *App) advise(ctx context.Context, items []domain.ClusterItem, plan domain.ClusterPlan, needs func(id string) bool) ([][]string, map[string]decision) {
	decisions := map[string]decision{}
	var kept []domain.ClusterItem
	for _, it := range items {
		if _, dup := plan.Duplicates[it.ID]; !dup {
			kept = append(kept, it)
		}
	}
	links := map[string][]string{}
	for _, it := range kept {
		if !needs(it.ID) {
			continue
		}
		candidates := domain.Candidates(kept, it, maxCandidates)
		advice, err := a.Advisor.Advise(ctx, it, candidates)
		if err != nil {
			decisions[it.ID] = decision{decidedBy: rulesDecided, fallback: "the model could not answer (" + err.Error() + ")"}
			continue
		}
		advice.SimilarTo = slices.DeleteFunc(advice.SimilarTo, func(id string) bool {
			return !slices.ContainsFunc(candidates, func(c domain.ClusterItem) bool { return c.ID == id })
		})
		if !slices.Contains(domain.IssueTypes, advice.IssueType) {
			advice.IssueType = ""
		}
		links[it.ID] = advice.SimilarTo
		decisions[it.ID] = decision{advice: &advice, decidedBy: "model " + a.Advisor.Name()}
	}
	return domain.Relink(kept, plan.Groups, links), decisions
}

// rulesDecided marks what the offline rules decided.
const rulesDecided = "rules"
