package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// maxClustered bounds the active tickets of one agent a clustering pass
// compares (the newest ones); each pass is O(n²) in them.
const maxClustered = 2000

// ClusterAgent clusters an agent's active tickets (domain.Cluster): each
// ticket that needs clustering is merged into its older exact duplicate
// through the merge rules, or labelled with its group and given the issue
// type its text clearly states, and its needs_clustering is cleared, in
// one TicketClustered event, with a comment saying what changed and why
// when something did. Tickets already clustered are left alone,
// except that a group's oldest member gets the group's label, so the label
// filter lists the whole group. Every change is undone through the ticket
// API: PATCH labels, issue_type, or needs_clustering true to cluster the
// ticket again.
//
// The read model is what it clusters: a caller that learnt of tickets
// from their events puts those states first (the read model keeps the
// newest by stream sequence), so a pass sees them, and a pass woken by
// an event older than what the read model holds (a backlog already
// clustered by an earlier pass) finds nothing to do and costs one page
// walk.
func (a *App) ClusterAgent(ctx context.Context, workspaceID, agentID string) error {
	active, err := a.activeTickets(ctx, workspaceID, agentID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(active, func(t *ticketsv1.Ticket) bool { return t.NeedsClustering }) {
		return nil
	}
	byID := map[string]*ticketsv1.Ticket{}
	items := make([]domain.ClusterItem, 0, len(active))
	for _, t := range active {
		byID[t.TicketId] = t
		items = append(items, clusterItem(t))
	}
	plan := domain.Cluster(items)
	decisions := map[string]decision{}
	if a.Advisor != nil {
		plan.Groups, decisions = a.advise(ctx, items, plan, func(id string) bool { return byID[id].NeedsClustering })
	}
	caller := principal.Principal{WorkspaceID: workspaceID, UserID: QAActor}

	for dup, into := range plan.Duplicates {
		if !byID[dup].NeedsClustering && !settledTwin(byID[dup]) {
			continue
		}
		if _, err := a.Merge(ctx, principal.Caller{Principal: caller}, into, []string{dup}); err != nil {
			if apperr.KindOf(err) == apperr.Conflict {
				// Another QA worker merged it (or its target) since this
				// pass read them: nothing to redeliver; a later pass sees
				// what is left.
				continue
			}
			return fmt.Errorf("merge duplicate %s into %s: %w", dup, into, err)
		}
	}
	grouped := map[string][]string{}
	for _, g := range plan.Groups {
		for _, id := range g {
			grouped[id] = g
		}
	}
	for _, t := range active {
		if _, dup := plan.Duplicates[t.TicketId]; dup {
			continue
		}
		g := grouped[t.TicketId]
		anchor := len(g) > 0 && g[0] == t.TicketId && slices.ContainsFunc(g[1:], func(id string) bool { return byID[id].NeedsClustering })
		if !t.NeedsClustering && !anchor {
			continue
		}
		if err := a.clusterOne(ctx, workspaceID, t.TicketId, g, byID, decisions[t.TicketId]); err != nil {
			return err
		}
	}
	return nil
}

// settledTwin reports whether t, clustered already, is a ticket the QA
// worker raised that nobody has touched since: two QA workers clustering
// at once can each find no similar ticket for one of two exact duplicates
// (neither has seen the other yet), and the pass that next sees both
// merges the newer. A ticket a person raised, assigned, moved, commented
// on or merged others into is left as it is.
func settledTwin(t *ticketsv1.Ticket) bool {
	if t.NeedsClustering || t.OwnerUserId != QAActor || t.Status != domain.StatusOpen || t.GetAssigneeUserId() != "" ||
		len(t.ConversationIds) > 1 || len(t.TurnComments) > 0 {
		return false
	}
	for _, c := range t.TicketComments {
		if c.GetOwnerUserId() != QAActor {
			return false
		}
	}
	for _, c := range t.StatusChanges {
		if c.GetChangedByUserId() != QAActor {
			return false
		}
	}
	for _, c := range t.PriorityChanges {
		if c.GetChangedByUserId() != QAActor {
			return false
		}
	}
	return true
}

func (a *App) activeTickets(ctx context.Context, ws, agentID string) ([]*ticketsv1.Ticket, error) {
	var out []*ticketsv1.Ticket
	for _, status := range domain.ActiveStatuses {
		q := Query{WorkspaceID: ws, Filter: Filter{AgentID: agentID, Status: status}, Limit: 100}
		for len(out) < maxClustered {
			page, more, err := a.ReadModel.Page(ctx, q)
			if err != nil {
				return nil, err
			}
			out = append(out, page...)
			if !more || len(page) == 0 {
				break
			}
			last := PositionOf(page[len(page)-1], false)
			q.After = &last
		}
	}
	return out, nil
}

func clusterItem(t *ticketsv1.Ticket) domain.ClusterItem {
	headline := t.Title + "\n" + t.GetQaComment()
	var text strings.Builder
	text.WriteString(headline)
	for _, c := range t.TicketComments {
		if c.GetOwnerUserId() == QAActor && strings.HasPrefix(c.Comment, "Clustered") {
			continue // our own notes say nothing about the issue
		}
		text.WriteString("\n" + c.Comment)
	}
	for _, c := range t.TurnComments {
		text.WriteString("\n" + c.Comment)
	}
	return domain.ClusterItem{ID: t.TicketId, CreatedAtMs: t.CreatedAtUnixMs, Headline: headline, Text: text.String(), Settled: !t.NeedsClustering}
}

// clusterOne labels one ticket with its group (if any), sets its issue
// type when clear and unset, and clears needs_clustering.
// The decision says whether a model judged it (an anchor, judged with
// its group's newcomers, has none: the rules label it).
func (a *App) clusterOne(ctx context.Context, ws, id string, group []string, byID map[string]*ticketsv1.Ticket, d decision) error {
	_, err := a.change(ctx, ws, id, "", func(t *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
		if !domain.IsActive(t.Status) {
			return nil, nil // changed since it was read: a later pass sees it
		}
		before := &ticketsv1.Ticket{IssueType: t.IssueType, Labels: slices.Clone(t.Labels), NeedsClustering: t.NeedsClustering}
		ev := &ticketsv1.TicketClustered{Meta: meta, Ticket: t, DecidedBy: orDefault(d.decidedBy, rulesDecided)}
		var why []string
		if d.fallback != "" {
			why = append(why, d.fallback+"; the offline rules decided")
		}
		if len(group) > 1 {
			ev.ClusterLabel = domain.ClusterLabel(group[0])
			mine := domain.ContentWords(clusterItem(t).Text)
			for _, other := range group {
				if other == t.TicketId {
					continue
				}
				ev.SimilarTicketIds = append(ev.SimilarTicketIds, other)
				if o := byID[other]; o != nil && len(ev.SimilarTicketIds) == 1 {
					if d.advice != nil {
						why = append(why, fmt.Sprintf("similar to %s", other))
					} else {
						shared := domain.SharedWords(mine, domain.ContentWords(clusterItem(o).Text))
						why = append(why, fmt.Sprintf("similar to %s (shared: %s)", other, strings.Join(firstN(shared, 8), ", ")))
					}
				}
			}
			if !slices.Contains(t.Labels, ev.ClusterLabel) && len(t.Labels) < domain.MaxLabels {
				t.Labels = append(t.Labels, ev.ClusterLabel)
			}
		}
		if t.IssueType == "" && t.NeedsClustering {
			switch {
			case d.advice != nil && d.advice.IssueType != "":
				t.IssueType, ev.IssueTypeSet = d.advice.IssueType, d.advice.IssueType
				why = append(why, "issue type "+d.advice.IssueType)
			case d.advice != nil:
			default:
				if it, phrase, ok := domain.ClassifyIssue(clusterItem(t).Text); ok {
					t.IssueType, ev.IssueTypeSet = it, it
					why = append(why, fmt.Sprintf("issue type %s (it says %q)", it, phrase))
				}
			}
		}
		if d.advice != nil && d.advice.Reason != "" && len(why) > 0 {
			why = append(why, "the model says: "+strings.TrimSuffix(strings.TrimSpace(d.advice.Reason), "."))
		}
		t.NeedsClustering = false
		if ev.ChangedFields = clusteringChanges(before, t); len(ev.ChangedFields) == 0 {
			return nil, nil // an anchor that already carries its label
		}
		ev.Public = publicOf(domain.Clustered(ev.ChangedFields))
		if len(why) == 0 {
			// Nothing to say on the ticket: the event alone records it.
			ev.Reason = "no similar ticket, issue type not clear"
			return ev, nil
		}
		ev.Reason = strings.Join(why, "; ")
		t.TicketComments = append(t.TicketComments, &ticketsv1.Comment{
			Comment: "Clustered: " + ev.Reason + ".", CreatedAtUnixSecs: a.Now().Unix(), OwnerUserId: proto.String(QAActor),
		})
		return ev, nil
	})
	return err
}

// clusteringChanges names the fields clustering changed, as an update
// through the API names them (TicketUpdated's changed_fields), so that
// webhooks hear of it as ticket_updated.
func clusteringChanges(before, after *ticketsv1.Ticket) []string {
	var changed []string
	if before.IssueType != after.IssueType {
		changed = append(changed, "issue_type")
	}
	if !slices.Equal(before.Labels, after.Labels) {
		changed = append(changed, "labels")
	}
	if before.NeedsClustering != after.NeedsClustering {
		changed = append(changed, "needs_clustering")
	}
	return changed
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
