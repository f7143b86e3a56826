package memory

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/adapters/ordlist"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// fields are what the filters test of a ticket, each a number into the
// index's names (a few dozen agents, users, labels and statuses stand for
// a million tickets).
type fields struct {
	agent, status, priority, source, owner, issueType, assignee, merged uint32
	labels                                                              uint32 // the set of its labels (labelSet)
	assigned                                                            bool
}

// name is s's number, s added to the names when new.
func (m *Index) name(s string) uint32 {
	id, ok := m.nameIDs[s]
	if !ok {
		id = uint32(len(m.names))
		s = strings.Clone(s) // not a slice of a decoded event
		m.names = append(m.names, s)
		m.nameIDs[s] = id
	}
	return id
}

// labelSet is the number of a ticket's labels as one name: their numbers
// joined, so a ticket keeps one number, not a slice.
func (m *Index) labelSet(labels []string) uint32 {
	if len(labels) == 0 {
		return 0
	}
	var b strings.Builder
	for _, l := range labels {
		b.WriteString(strconv.FormatUint(uint64(m.name(l)), 36))
		b.WriteByte(',')
	}
	return m.name(b.String())
}

// hasLabel reports whether the label set numbered set holds label.
func (m *Index) hasLabel(set, label uint32) bool {
	if set == 0 {
		return false
	}
	want := strconv.FormatUint(uint64(label), 36)
	for id := range strings.SplitSeq(m.names[set], ",") {
		if id == want {
			return true
		}
	}
	return false
}

func (m *Index) fieldsOf(t *ticketsv1.Ticket) fields {
	return fields{
		agent: m.name(t.AgentId), status: m.name(t.Status), priority: m.name(t.Priority), source: m.name(t.Source),
		owner: m.name(t.OwnerUserId), issueType: m.name(t.IssueType), assignee: m.name(t.GetAssigneeUserId()),
		assigned: t.AssigneeUserId != nil, merged: m.name(t.GetMergedIntoTicketId()), labels: m.labelSet(t.Labels),
	}
}

// The terms a ticket is listed under: one per filter value it has.
func agentTerm(id string) string    { return "a:" + id }
func statusTerm(s string) string    { return "s:" + s }
func rankTerm(rank int) string      { return "r:" + strconv.Itoa(rank) }
func sourceTerm(s string) string    { return "o:" + s }
func ownerTerm(id string) string    { return "u:" + id }
func issueTerm(s string) string     { return "t:" + s }
func assigneeTerm(id string) string { return "as:" + id }
func labelTerm(l string) string     { return "l:" + l }
func convTerm(id string) string     { return "c:" + id }
func mergedTerm(id string) string   { return "m:" + id }

const unassignedTerm = "as-"

// termsOf are t's terms, sorted, each once.
func (m *Index) termsOf(t *ticketsv1.Ticket) []string {
	terms := []string{agentTerm(t.AgentId), statusTerm(t.Status), rankTerm(domain.PriorityRank(t.Priority)),
		sourceTerm(t.Source), ownerTerm(t.OwnerUserId), unassignedTerm}
	if t.AssigneeUserId != nil {
		terms[len(terms)-1] = assigneeTerm(*t.AssigneeUserId)
	}
	if t.IssueType != "" {
		terms = append(terms, issueTerm(t.IssueType))
	}
	if merged := t.GetMergedIntoTicketId(); merged != "" {
		terms = append(terms, mergedTerm(merged))
	}
	for _, l := range t.Labels {
		terms = append(terms, labelTerm(l))
	}
	for _, c := range t.ConversationIds {
		terms = append(terms, convTerm(c))
	}
	slices.Sort(terms)
	return slices.Compact(terms)
}

// gramsOf are the three-byte pieces of t's searchable texts as a search
// compares them (app.SearchText), sorted, each once: a search's matches
// hold every piece of its text.
func gramsOf(t *ticketsv1.Ticket) []uint32 { return gramsOfTexts(searchTexts(t)) }

// searchTexts are the texts a search reads.
func searchTexts(t *ticketsv1.Ticket) []string {
	texts := []string{t.Title, t.GetQaComment()}
	for _, c := range t.TicketComments {
		texts = append(texts, c.Comment)
	}
	for _, c := range t.TurnComments {
		texts = append(texts, c.Comment)
	}
	return texts
}

// gramSet finds the distinct pieces of texts without sorting them: a
// bit per possible piece (2 MiB, made at first use), cleared after each
// call. For a replay's listing, which needs them each once, in no order.
type gramSet struct {
	bits    []uint64
	scratch []byte // a text as a search compares it
	// arena holds the pieces found since the last newArena, each call's
	// a slice of it: a window of a replay's tickets takes a few blocks,
	// not a slice a ticket.
	arena []uint32
}

// newArena starts an arena for the pieces of the calls to come (those
// found before stay where they are), sized as the last one came to be.
func (s *gramSet) newArena() { s.arena = make([]uint32, 0, max(1<<12, len(s.arena)+len(s.arena)/8)) }

func (s *gramSet) distinct(texts []string) []uint32 {
	if s.bits == nil {
		s.bits = make([]uint64, 1<<24/64)
	}
	start := len(s.arena)
	for _, text := range texts {
		s.scratch = appendSearchText(s.scratch[:0], text)
		for i := 0; i+3 <= len(s.scratch); i++ {
			g := gram(s.scratch[i:])
			if w, bit := g/64, uint64(1)<<(g%64); s.bits[w]&bit == 0 {
				s.bits[w] |= bit
				s.arena = append(s.arena, g)
			}
		}
	}
	grams := s.arena[start:len(s.arena):len(s.arena)]
	for _, g := range grams {
		s.bits[g/64] = 0
	}
	return grams
}

// gramsOfTexts are the pieces of texts, sorted, each once.
func gramsOfTexts(texts []string) []uint32 {
	var grams []uint32
	for _, text := range texts {
		grams = appendGrams(grams, text)
	}
	slices.Sort(grams)
	return slices.Compact(grams)
}

// addedTexts are the comments t adds to prev, when all that changed of
// the searchable text is comments added (none, when none changed); false
// when a text changed otherwise.
func addedTexts(prev, t *ticketsv1.Ticket) ([]string, bool) {
	if prev.Title != t.Title || prev.GetQaComment() != t.GetQaComment() {
		return nil, false
	}
	comments, ok := appendedComments(nil, prev.TicketComments, t.TicketComments)
	if !ok {
		return nil, false
	}
	return appendedComments(comments, prev.TurnComments, t.TurnComments)
}

// appendedComments appends to added the comments of next past those of
// prev, when next begins with prev's; false when it does not.
func appendedComments[C interface{ GetComment() string }](added []string, prev, next []C) ([]string, bool) {
	if len(next) < len(prev) {
		return nil, false
	}
	for i, c := range next {
		switch {
		case i >= len(prev):
			added = append(added, c.GetComment())
		case prev[i].GetComment() != c.GetComment():
			return nil, false
		}
	}
	return added, true
}

func appendGrams(grams []uint32, text string) []uint32 {
	s := appendSearchText(nil, text)
	for i := 0; i+3 <= len(s); i++ {
		grams = append(grams, gram(s[i:]))
	}
	return grams
}

// gram is the piece b begins with.
func gram(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// appendSearchText appends app.SearchText(text) to dst. An ASCII text,
// the usual one, is folded here with nothing allocated (a replay's
// listing folds every text of a million tickets).
func appendSearchText(dst []byte, text string) []byte {
	start, space := len(dst), false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= utf8.RuneSelf:
			return append(dst[:start], app.SearchText(text)...)
		case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			space = len(dst) > start
		default:
			if space {
				dst, space = append(dst, ' '), false
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
	}
	return dst
}

// plan is a query made ready for one workspace: its filter's values as
// numbers, and the lists a walk may read.
type plan struct {
	m                                                        *Index
	agent, status, owner, issueType, assignee, merged, label want
	unassigned, agentSource                                  bool
	sources, priorities                                      []uint32 // nil: any
	ranks                                                    []int    // nil: any
	rank                                                     int      // the priority walked (the priority order), or -1
	byFields                                                 bool     // some field is tested (a search alone tests none)
	conv                                                     *ordlist.List
	lists                                                    []*ordlist.List // every list a match is in (but its priority's)
	grams                                                    []*ordlist.List // the search's, shortest first
}

// want is a field's wanted value, when the filter sets it.
type want struct {
	on bool
	id uint32
}

func (w want) allows(id uint32) bool { return !w.on || w.id == id }

// plan prepares f for sp; false when nothing can match (a value no
// ticket of the workspace has).
func (m *Index) plan(sp *space, f app.Filter) (*plan, bool) {
	p := &plan{m: m, rank: -1}
	ok := true
	// need notes that matches are in the list of term, and returns the
	// number of value.
	need := func(value, term string) want {
		l := sp.terms[term]
		id, known := m.nameIDs[value]
		if l == nil || !known {
			ok = false
			return want{}
		}
		p.lists = append(p.lists, l)
		return want{on: true, id: id}
	}
	if f.AgentID != "" {
		p.agent = need(f.AgentID, agentTerm(f.AgentID))
	}
	if f.Status != "" {
		p.status = need(f.Status, statusTerm(f.Status))
	}
	switch f.Assignee {
	case "":
	case "unassigned":
		p.unassigned = true
		need("", unassignedTerm)
	default:
		p.assignee = need(f.Assignee, assigneeTerm(f.Assignee))
	}
	if f.ConversationID != "" {
		need("", convTerm(f.ConversationID))
		p.conv = sp.terms[convTerm(f.ConversationID)]
	}
	switch f.OwnerUserID {
	case "":
	case "agent":
		p.agentSource = true
		need("", sourceTerm(domain.SourceAgent))
	default:
		p.owner = need(f.OwnerUserID, ownerTerm(f.OwnerUserID))
	}
	if f.IssueType != "" {
		p.issueType = need(f.IssueType, issueTerm(f.IssueType))
	}
	if f.Label != "" {
		p.label = need(f.Label, labelTerm(f.Label))
	}
	if f.MergedInto != "" {
		p.merged = need(f.MergedInto, mergedTerm(f.MergedInto))
	}
	if len(f.Sources) > 0 {
		p.sources = m.known(f.Sources)
		if len(f.Sources) == 1 {
			need(f.Sources[0], sourceTerm(f.Sources[0]))
		}
		ok = ok && len(p.sources) > 0
	}
	if len(f.Priorities) > 0 {
		p.priorities = m.known(f.Priorities)
		for _, pr := range f.Priorities {
			p.ranks = append(p.ranks, domain.PriorityRank(pr))
		}
		if len(f.Priorities) == 1 {
			need("", rankTerm(p.ranks[0]))
		}
		ok = ok && len(p.priorities) > 0
	}
	p.byFields = f.AgentID != "" || f.Status != "" || f.Assignee != "" || f.OwnerUserID != "" || f.IssueType != "" ||
		f.Label != "" || f.MergedInto != "" || len(f.Sources) > 0 || len(f.Priorities) > 0
	if f.Search != "" && !m.noSearch {
		text := app.SearchText(f.Search)
		ok = ok && text != "" // a search of white space matches nothing
		grams := appendGrams(nil, f.Search)
		slices.Sort(grams)
		for _, g := range slices.Compact(grams) {
			l := sp.grams[g]
			if l == nil {
				return nil, false
			}
			p.grams = append(p.grams, l)
		}
		slices.SortFunc(p.grams, func(a, b *ordlist.List) int { return a.Len() - b.Len() })
	}
	return p, ok
}

// known are the numbers of the names values holds that the index knows.
func (m *Index) known(values []string) []uint32 {
	var ids []uint32
	for _, v := range values {
		if id, ok := m.nameIDs[v]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func (p *plan) allowsRank(rank int) bool { return p.ranks == nil || slices.Contains(p.ranks, rank) }

// shortest is the shortest of the plan's lists and base.
func (p *plan) shortest(base *ordlist.List) *ordlist.List {
	best := base
	for _, l := range p.lists {
		if l.Len() < best.Len() {
			best = l
		}
	}
	if len(p.grams) > 0 && p.grams[0].Len() < best.Len() {
		best = p.grams[0]
	}
	return best
}

// members are the tests of a walk's candidates' membership in the lists
// other than its source, the test that has turned most candidates away
// tried first: a search's pieces of one word hold mostly the same tickets,
// so most of its candidates pass all but a few of its lists, and asking
// those few first saves most of the others' reads.
type members struct {
	in      []*ordlist.Reverse
	refused []int // by test, how many candidates it turned away
}

// readers read the lists a walk of source tests its candidates' membership
// in: the conversation's and the search's, but source.
func (p *plan) readers(source *ordlist.List) *members {
	ms := &members{}
	if p.conv != nil && p.conv != source {
		ms.in = append(ms.in, p.conv.Reverse())
	}
	for _, l := range p.grams {
		if l != source {
			ms.in = append(ms.in, l.Reverse())
		}
	}
	ms.refused = make([]int, len(ms.in))
	return ms
}

// hold reports whether every list holds o, moving a test that turns o
// away ahead of the one before it when it has now turned away more.
func (m *members) hold(sp *space, o uint32) bool {
	for i, r := range m.in {
		if found, ok := r.Find(func(x uint32) bool { return x != o && !sp.less(x, o) }); ok && found == o {
			continue
		}
		m.refused[i]++
		if i > 0 && m.refused[i] > m.refused[i-1] {
			m.in[i], m.in[i-1] = m.in[i-1], m.in[i]
			m.refused[i], m.refused[i-1] = m.refused[i-1], m.refused[i]
		}
		return false
	}
	return true
}

// passes tests the ticket of ordinal o on its fields, then on its
// membership in the lists in: what fails here cannot match, what passes
// is decoded and tested whole (app.Filter.Matches). Candidates come newest
// first, as in reads. A search alone reads no entry: the walk's lists and
// the dense creation times tell.
func (p *plan) passes(sp *space, o uint32, in *members) bool {
	if p.byFields && !p.fieldsAllow(sp.entries[o]) {
		return false
	}
	return in.hold(sp, o)
}

// fieldsAllow tests e's fields.
func (p *plan) fieldsAllow(e *entry) bool {
	m := p.m
	switch {
	case !p.agent.allows(e.agent), !p.status.allows(e.status), !p.owner.allows(e.owner),
		!p.issueType.allows(e.issueType), !p.merged.allows(e.merged),
		p.assignee.on && (!e.assigned || e.assignee != p.assignee.id),
		p.unassigned && e.assigned,
		p.agentSource && m.names[e.source] != domain.SourceAgent,
		p.label.on && !m.hasLabel(e.labels, p.label.id),
		p.sources != nil && !slices.Contains(p.sources, e.source),
		p.priorities != nil && !slices.Contains(p.priorities, e.priority),
		p.rank >= 0 && domain.PriorityRank(m.names[e.priority]) != p.rank:
		return false
	}
	return true
}
