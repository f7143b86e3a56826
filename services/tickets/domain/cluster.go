package domain

import (
	"slices"
	"strings"
	"unicode"

	"github.com/voiceai-platform/voiceai/pkg/textsim"
)

// Clustering groups an agent's open tickets by what they say, offline and
// deterministically: the same tickets always give the same groups, merges
// and issue types.
//
//   - Exact duplicates: the same title and QA comment once case, spacing
//     and punctuation are ignored. The newer is merged into the older.
//   - Similar: the Jaccard similarity of their content words (stop words
//     and, among four or more tickets, the words most of them share
//     dropped) is at least SimilarityThreshold, linked transitively. A
//     group shares one label, ClusterLabelPrefix plus its oldest member's
//     id, so the listing's label filter shows the group.
//   - Issue type: set only where exactly one rule of IssueRules matches
//     (clear); otherwise left for a human.

// SimilarityThreshold is the Jaccard similarity at which two tickets are
// grouped: half their distinct content words shared.
const SimilarityThreshold = 0.5

// ClusterLabelPrefix starts every cluster label.
const ClusterLabelPrefix = "cluster-"

// ClusterItem is one ticket as clustering sees it.
type ClusterItem struct {
	ID          string
	CreatedAtMs int64
	Headline    string // title and QA comment: what exact duplicates share
	Text        string // everything the ticket says: headline, comments, rationales
	// Settled: the ticket was already clustered. Of duplicates created in
	// the same millisecond, a settled one is the elder: it stays, and the
	// one still to cluster merges into it (the other way round, neither
	// would ever merge, as only a ticket that needs clustering is merged).
	Settled bool
}

// ClusterPlan is what clustering decided.
type ClusterPlan struct {
	// Duplicates maps a ticket to the older exact duplicate it merges into.
	Duplicates map[string]string
	// Groups are the similar tickets (two or more, duplicates excluded),
	// oldest first.
	Groups [][]string
}

// Cluster plans the clustering of items (one agent's active tickets).
func Cluster(items []ClusterItem) ClusterPlan {
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b ClusterItem) int {
		if a.CreatedAtMs != b.CreatedAtMs {
			return int(a.CreatedAtMs - b.CreatedAtMs)
		}
		if a.Settled != b.Settled {
			if a.Settled {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	plan := ClusterPlan{Duplicates: map[string]string{}}
	firstOf := map[string]string{}
	var kept []ClusterItem
	for _, it := range sorted {
		key := normalize(it.Headline)
		if first, ok := firstOf[key]; ok && key != "" {
			plan.Duplicates[it.ID] = first
			continue
		}
		firstOf[key] = it.ID
		kept = append(kept, it)
	}

	groups := similarGroups(kept)
	for _, g := range groups {
		if len(g) > 1 {
			plan.Groups = append(plan.Groups, g)
		}
	}
	return plan
}

// similarGroups links items (oldest first) whose content words are at
// least SimilarityThreshold alike, transitively, and returns every group
// (singletons included), each oldest first. Only pairs that share a word
// are compared, found through an inverted index, so a pass costs the
// shared words rather than every pair: once boilerplate is dropped, most
// tickets share few words with most others.
func similarGroups(items []ClusterItem) [][]string {
	sets := make([][]int32, len(items)) // each item's distinct word ids
	ids := map[string]int32{}
	for i, it := range items {
		for w := range ContentWords(it.Text) {
			id, ok := ids[w]
			if !ok {
				id = int32(len(ids))
				ids[w] = id
			}
			sets[i] = append(sets[i], id)
		}
	}
	dropBoilerplate(sets, len(ids))

	parent := make([]int, len(items))
	for i := range parent {
		parent[i] = i
	}
	root := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	postings := make([][]int32, len(ids)) // word id → older items using it
	shared := make([]int32, len(items))
	var touched []int32
	for i, set := range sets {
		touched = touched[:0]
		for _, w := range set {
			for _, j := range postings[w] {
				if shared[j] == 0 {
					touched = append(touched, j)
				}
				shared[j]++
			}
			postings[w] = append(postings[w], int32(i))
		}
		for _, j := range touched {
			n := int(shared[j])
			shared[j] = 0
			if float64(n)/float64(len(set)+len(sets[j])-n) >= SimilarityThreshold {
				ri, rj := root(i), root(int(j))
				if ri != rj {
					parent[max(ri, rj)] = min(ri, rj) // the oldest stays the root
				}
			}
		}
	}
	byRoot := map[int]int{}
	var groups [][]string
	for i, it := range items {
		r := root(i)
		g, ok := byRoot[r]
		if !ok {
			g = len(groups)
			byRoot[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], it.ID)
	}
	return groups
}

// dropBoilerplate removes, among four or more tickets, the words more than
// half of them use: the wording every ticket of a kind shares (a judge's
// stock phrases, "escalated to") says nothing about what went wrong, and
// would otherwise group everything.
func dropBoilerplate(sets [][]int32, words int) {
	if len(sets) < 4 {
		return
	}
	df := make([]int, words)
	for _, s := range sets {
		for _, w := range s {
			df[w]++
		}
	}
	for i, s := range sets {
		sets[i] = slices.DeleteFunc(s, func(w int32) bool { return 2*df[w] > len(sets) })
	}
}

// ClusterLabel is the label of a group whose oldest member is oldestID.
func ClusterLabel(oldestID string) string {
	id := oldestID
	if len(ClusterLabelPrefix)+len(id) > MaxLabelLen {
		id = id[len(id)-(MaxLabelLen-len(ClusterLabelPrefix)):]
	}
	return ClusterLabelPrefix + id
}

// SharedWords lists the content words a and b share, sorted.
func SharedWords(a, b map[string]bool) []string {
	var out []string
	for w := range a {
		if b[w] {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// ContentWords are the distinct lower-case words of text of two or more
// letters that are not stop words.
func ContentWords(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range words(text) {
		if len(w) > 1 && !stopWords[w] {
			out[w] = true
		}
	}
	return out
}

func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// normalize is text without case, punctuation or extra spaces.
func normalize(text string) string { return strings.Join(words(text), " ") }

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by can could did do does for from had has have he her
		his how i if in into is it its me my no not of on or our she so than that the their them then there
		these they this to too us was we were what when where which who why will with would you your
		agent user test tests run runs failed fails failure invocation conversation ticket`) {
		m[w] = true
	}
	return m
}()

// IssueRule sets an issue type when a ticket's text says so.
type IssueRule struct {
	IssueType string
	Phrases   []string // any one, matched on the normalized text
}

// IssueRules are the offline issue-type rules, each a list of telling
// phrases.
var IssueRules = []IssueRule{
	{"knowledge_gap", []string{"don't know", "do not know", "does not know", "doesn't know", "can't help", "cannot help", "not able to help", "unable to help",
		"no information", "don't have information", "do not have information", "not covered", "doesn't cover", "does not cover"}},
	{"incorrect_information", []string{"incorrect", "wrong information", "inaccurate", "contradicts", "hallucinat", "made up"}},
	{"tool_issue", []string{"tool error", "tool failed", "tool call failed", "tool returned an error", "tool timed out", "api error"}},
	{"missing_tool", []string{"missing tool", "no tool", "needs a tool", "without a tool"}},
	{"unnecessary_escalation", []string{"unnecessary escalation", "escalated unnecessarily", "should not have escalated", "needless escalation"}},
	{"wrong_action", []string{"wrong action", "wrong tool", "should not have called", "called the wrong"}},
}

// ClassifyIssue returns the issue type text clearly states (exactly one
// rule matches) and the phrase that decided it.
func ClassifyIssue(text string) (issueType, phrase string, ok bool) {
	norm := " " + strings.ToLower(strings.Join(strings.Fields(text), " ")) + " "
	for _, r := range IssueRules {
		for _, p := range r.Phrases {
			if strings.Contains(norm, p) {
				if ok && issueType != r.IssueType {
					return "", "", false // two rules: not clear
				}
				issueType, phrase, ok = r.IssueType, p, true
				break
			}
		}
	}
	return issueType, phrase, ok
}

// Candidates are the items a model is shown to judge it against: the
// others most alike in content words (the most alike first, then the
// newest), at most n. Words every ticket of a kind shares are not
// dropped here: a model reads the whole text anyway, and this only
// bounds what it is shown.
func Candidates(items []ClusterItem, it ClusterItem, n int) []ClusterItem {
	mine := ContentWords(it.Text)
	type scored struct {
		item  ClusterItem
		score float64
	}
	var all []scored
	for _, o := range items {
		if o.ID != it.ID {
			all = append(all, scored{o, textsim.Jaccard(mine, ContentWords(o.Text))})
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.item.CreatedAtMs != b.item.CreatedAtMs:
			if a.item.CreatedAtMs > b.item.CreatedAtMs {
				return -1
			}
			return 1
		}
		return strings.Compare(a.item.ID, b.item.ID)
	})
	out := make([]ClusterItem, 0, min(n, len(all)))
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.item)
	}
	return out
}

// Relink regroups items after a model judged some of them: each ticket
// in links leaves the group the rules gave it and joins the groups of the
// tickets it names (naming none, it stands alone); the others keep their
// groups. Groups of two or more are returned, oldest member first and
// ordered by it, as Cluster returns them.
func Relink(items []ClusterItem, groups [][]string, links map[string][]string) [][]string {
	age := map[string]ClusterItem{}
	for _, it := range items {
		age[it.ID] = it
	}
	older := func(a, b string) int {
		x, y := age[a], age[b]
		if x.CreatedAtMs != y.CreatedAtMs {
			if x.CreatedAtMs < y.CreatedAtMs {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	}
	parent := map[string]string{}
	var root func(string) string
	root = func(id string) string {
		p, ok := parent[id]
		if !ok || p == id {
			return id
		}
		r := root(p)
		parent[id] = r
		return r
	}
	union := func(a, b string) {
		ra, rb := root(a), root(b)
		if ra == rb {
			return
		}
		if older(ra, rb) < 0 {
			parent[rb] = ra
		} else {
			parent[ra] = rb
		}
	}
	for _, g := range groups {
		var kept []string
		for _, id := range g {
			if _, judged := links[id]; !judged {
				kept = append(kept, id)
			}
		}
		for _, id := range kept[min(1, len(kept)):] {
			union(kept[0], id)
		}
	}
	for id, named := range links {
		for _, other := range named {
			if _, known := age[other]; known && other != id {
				union(id, other)
			}
		}
	}
	members := map[string][]string{}
	for _, it := range items {
		r := root(it.ID)
		members[r] = append(members[r], it.ID)
	}
	var out [][]string
	for _, m := range members {
		if len(m) > 1 {
			slices.SortFunc(m, older)
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return older(a[0], b[0]) })
	return out
}
