package memory

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/adapters/ordlist"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Index is the read model kept in memory. It is fed from the TICKETS
// stream (each ticket's last event at start, then live) and by the
// service's own writes, and serves where the store cannot index (the
// embedded FerretDB scans every document of a filtered query).
//
// It is built to hold a million tickets within the platform's memory
// and to answer every listing by walking what can match:
//   - a ticket is kept marshaled (one block of bytes the collector need
//     not look into) beside the few fields the filters test, as numbers
//     into a table of names (terms.go);
//   - per workspace, each filter value (an agent, a status, a label, a
//     conversation…) and each three-byte piece of the searchable text
//     has a list of its tickets, compressed (package ordlist) and kept in
//     the listing's order;
//   - a page walks the shortest list among its query's, newest first
//     from the cursor (the priority order walks one priority after the
//     other), tests the rest on the fields, and decodes only the tickets
//     that pass: a rare label, a search of words no ticket holds, or
//     several filters at once cost their matches, not the workspace.
type Index struct {
	mu      sync.RWMutex
	tickets map[string]*entry // ticket id → its newest state
	spaces  map[string]*space // workspace id → its lists
	names   []string          // the names the entries' fields number; names[0] is ""
	nameIDs map[string]uint32
	// loading, until Loaded, holds what Put is given unlisted: staged
	// (each ticket once).
	loading bool
	staged  []*entry
	// decoded keeps the tickets pages decoded last: a QA worker lists an
	// agent's active tickets (up to 2,000) on every clustering pass.
	decoded *lru.Cache[*entry, decodedTicket]
	// noSearch: no search lists (WithoutSearch).
	noSearch bool
	// log hears of a staged ticket Loaded could not read (WithLogger).
	log *slog.Logger
}

// decodedTicket is an entry's ticket as of seq.
type decodedTicket struct {
	seq uint64
	t   *ticketsv1.Ticket
}

// decodedTickets is how many decoded tickets an index keeps: a QA
// worker's clustering set and a few pages more (a few MiB).
const decodedTickets = 4096

// entry is one ticket. Its position in the newest-first order (created,
// then id) is fixed at creation, so its ordinal keeps its place in every
// list it is in while the ticket changes.
type entry struct {
	id      string
	created int64
	seq     uint64
	ord     uint32 // its index in its workspace's entries
	state   []byte // the ticket, marshaled; nil once deleted
	staged  bool   // waiting for Loaded
	fields
}

// space is one workspace's tickets and lists.
type space struct {
	entries []*entry // by ordinal
	created []int64  // by ordinal, the entry's: what a search by position reads, in one dense block
	// labels number, by ordinal, the listed entries in the listing's order
	// (labels.go): two compare by one read, however they came.
	labels []uint64
	all    ordlist.List             // every live ticket
	terms  map[string]*ordlist.List // filter term (terms.go) → its tickets
	grams  map[uint32]*ordlist.List // three bytes of search text → its tickets
	// building: a replay's listing is building the lists whole
	// (listStaged), which grow by doubling until it trims them.
	building bool
}

// NewIndex returns an empty index.
func NewIndex(opts ...Option) *Index {
	decoded, _ := lru.New[*entry, decodedTicket](decodedTickets) // errs only on a size < 1
	m := &Index{tickets: map[string]*entry{}, spaces: map[string]*space{}, names: []string{""}, nameIDs: map[string]uint32{"": 0},
		decoded: decoded, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Option tunes an index.
type Option func(*Index)

// WithoutSearch keeps no search lists: a search walks its listing and
// tests each ticket. For a QA worker, which never searches and makes its
// tickets out of the listing's order (each at its run's time), where the
// lists would cost most of each write.
func WithoutSearch() Option { return func(m *Index) { m.noSearch = true } }

// WithLogger is where a loading index says which staged ticket it could
// not read at Loaded (it leaves it out).
func WithLogger(log *slog.Logger) Option { return func(m *Index) { m.log = log } }

// gramsOf are t's search pieces, none without search.
func (m *Index) gramsOf(t *ticketsv1.Ticket) []uint32 {
	if m.noSearch {
		return nil
	}
	return gramsOf(t)
}

// ticket is e's ticket, decoded or from the cache of the last decoded.
func (m *Index) ticket(e *entry) (*ticketsv1.Ticket, error) {
	if d, ok := m.decoded.Get(e); ok && d.seq == e.seq {
		return d.t, nil
	}
	t := &ticketsv1.Ticket{}
	if err := proto.Unmarshal(e.state, t); err != nil {
		return nil, err
	}
	m.decoded.Add(e, decodedTicket{e.seq, t})
	return t, nil
}

// NewLoadingIndex returns an empty index that lists what Put gives it
// only at Loaded, for a replay: a stream's last event per ticket comes in
// the order of each ticket's last change, not of the listing, and listing
// them as they come would insert most of them inside the lists (a
// million tickets changed at random took more than half of a restart's
// CPU so). Until Loaded, the index answers no listing.
func NewLoadingIndex(opts ...Option) *Index {
	m := NewIndex(opts...)
	m.loading = true
	return m
}

// Loaded lists what was put since NewLoadingIndex, in the listing's order
// (so every list is appended to, never inserted in), and from then on
// lists each Put at once. A staged ticket that cannot be decoded is left
// out (and logged, WithLogger).
func (m *Index) Loaded() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loading {
		return
	}
	staged := m.staged
	m.loading, m.staged = false, nil
	slices.SortFunc(staged, func(a, b *entry) int {
		if a.created != b.created {
			return cmp.Compare(a.created, b.created)
		}
		return strings.Compare(a.id, b.id)
	})
	m.listStaged(staged)
}

// Reset empties the index: its stream was made anew (a restore). A
// loading index stays loading, with nothing staged.
func (m *Index) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tickets, m.spaces, m.staged = map[string]*entry{}, map[string]*space{}, nil
	m.decoded.Purge()
}

// prepared is a staged entry read for listing: its ticket, terms and
// search pieces.
type prepared struct {
	e     *entry
	t     *ticketsv1.Ticket
	terms []string
	grams []uint32
	err   error
}

// loadWindow is how many staged entries are read at once.
const loadWindow = 4096

// listStaged lists staged entries, in their order: each window of them
// is read (decoded, its terms and pieces found) on every core while the
// window before is listed, which only appends. A ticket that cannot be
// read is left out, and said so.
func (m *Index) listStaged(staged []*entry) {
	windows := make(chan []prepared, 1)
	go func() {
		defer close(windows)
		workers := runtime.GOMAXPROCS(0)
		sets := make([]gramSet, workers)
		for start := 0; start < len(staged); start += loadWindow {
			part := staged[start:min(start+loadWindow, len(staged))]
			out := make([]prepared, len(part))
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					sets[w].newArena() // the window before is being listed from its own
					for i := w; i < len(part); i += workers {
						out[i] = m.prepare(part[i], &sets[w])
					}
				})
			}
			wg.Wait()
			windows <- out
		}
	}()
	var built []*space
	for out := range windows {
		for _, p := range out {
			p.e.staged = false
			switch {
			case p.e.state == nil:
			case p.err != nil:
				m.log.Warn("ticket not decoded; left out of the index", "ticket_id", p.e.id, "seq", p.e.seq, "err", p.err)
				delete(m.tickets, p.e.id)
			default:
				p.e.fields = m.fieldsOf(p.t)
				sp := m.space(p.t.WorkspaceId)
				if !sp.building && sp.all.Len() == 0 {
					sp.building, built = true, append(built, sp)
				}
				m.listNew(sp, p.e, p.terms, p.grams)
			}
		}
	}
	for _, sp := range built {
		sp.building = false
		sp.all.Trim()
		for _, l := range sp.terms {
			l.Trim()
		}
		for _, l := range sp.grams {
			l.Trim()
		}
	}
}

// prepare reads a staged entry (on any goroutine: it changes nothing).
func (m *Index) prepare(e *entry, set *gramSet) prepared {
	if e.state == nil {
		return prepared{e: e}
	}
	t := &ticketsv1.Ticket{}
	if err := proto.Unmarshal(e.state, t); err != nil {
		return prepared{e: e, err: err}
	}
	p := prepared{e: e, t: t, terms: m.termsOf(t)}
	if !m.noSearch {
		p.grams = set.distinct(searchTexts(t))
	}
	return p
}

// Holds reports whether the index holds ticket id as of stream sequence
// seq or later: the stream's copy of a write this replica made, already
// put, needs no decoding.
func (m *Index) Holds(id string, seq uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.loading {
		// A replay names each ticket once, and this replica wrote none
		// yet: no lookup (a million of them cost a restart 0.7 s of
		// CPU). Put keeps the newest whatever Holds says.
		return false
	}
	e := m.tickets[id]
	return e != nil && e.seq >= seq
}

// Put records t as of seq; older or equal sequences are ignored.
func (m *Index) Put(_ context.Context, seq uint64, t *ticketsv1.Ticket) error {
	return m.put(seq, t, nil)
}

// PutEncoded is Put of a ticket given encoded, as a record carries it
// (events.StateBytes): the index keeps a copy of that encoding rather
// than encode the decoded ticket again (a restart at a million tickets
// did, for 4% of its CPU). A loading index decodes nothing yet: it reads
// the ticket's id, creation time and deletion off the encoding (readHead)
// and decodes the rest at Loaded on every core (a replay decoded each
// ticket twice, once on its one goroutine).
func (m *Index) PutEncoded(_ context.Context, seq uint64, encoded []byte) error {
	m.mu.Lock()
	if m.loading {
		defer m.mu.Unlock()
		h, err := readHead(encoded)
		if err != nil {
			return err
		}
		m.stage(seq, h, bytes.Clone(encoded))
		return nil
	}
	m.mu.Unlock()
	t := &ticketsv1.Ticket{}
	if err := proto.Unmarshal(encoded, t); err != nil {
		return err
	}
	return m.put(seq, t, bytes.Clone(encoded))
}

// put is Put of t, whose encoding is state (nil: t is encoded here).
func (m *Index) put(seq uint64, t *ticketsv1.Ticket, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.tickets[t.TicketId]
	if e != nil && e.seq >= seq {
		return nil // the service's own write, then the stream's copy of it
	}
	if state == nil {
		var err error
		if state, err = (proto.MarshalOptions{Deterministic: true}).Marshal(t); err != nil {
			return err
		}
	}
	if m.loading {
		m.stage(seq, head{id: t.TicketId, created: t.CreatedAtUnixMs, deleted: t.DeletedAtUnixSecs != nil}, state)
		return nil
	}
	if e != nil && e.state != nil {
		prev := &ticketsv1.Ticket{}
		if err := proto.Unmarshal(e.state, prev); err != nil {
			return err
		}
		if prev.WorkspaceId != t.WorkspaceId || prev.CreatedAtUnixMs != t.CreatedAtUnixMs || t.DeletedAtUnixSecs != nil {
			sp := m.spaces[prev.WorkspaceId]
			sp.remove(&sp.all, e)
			m.unlist(sp, e, m.termsOf(prev), m.gramsOf(prev), nil, nil)
			e.state = nil // and listed again below when it moved
		} else {
			m.change(m.spaces[t.WorkspaceId], e, prev, t)
			e.seq, e.state, e.fields = seq, state, m.fieldsOf(t)
			return nil
		}
	}
	if e == nil {
		e = &entry{id: t.TicketId}
		m.tickets[t.TicketId] = e
	}
	e.seq = seq
	if t.DeletedAtUnixSecs != nil {
		return nil
	}
	e.state = state
	m.add(e, t)
	return nil
}

// stage keeps a loading index's ticket, encoded as state, for Loaded to
// list (its fields too are read there); older or equal sequences are
// ignored. The caller holds m.mu.
func (m *Index) stage(seq uint64, h head, state []byte) {
	e := m.tickets[h.id]
	if e != nil && e.seq >= seq {
		return
	}
	if e == nil {
		e = &entry{id: h.id}
		m.tickets[h.id] = e
	}
	e.seq, e.state, e.created = seq, state, h.created
	if h.deleted {
		e.state = nil
	}
	if !e.staged {
		e.staged = true
		m.staged = append(m.staged, e)
	}
}

// add lists e, a ticket new to its workspace's lists, as t.
func (m *Index) add(e *entry, t *ticketsv1.Ticket) {
	e.created, e.fields = t.CreatedAtUnixMs, m.fieldsOf(t)
	m.listNew(m.space(t.WorkspaceId), e, m.termsOf(t), m.gramsOf(t))
}

// listNew gives e its ordinal in sp and lists it under terms and grams.
func (m *Index) listNew(sp *space, e *entry, terms []string, grams []uint32) {
	e.ord = uint32(len(sp.entries))
	sp.entries, sp.created, sp.labels = append(sp.entries, e), append(sp.created, e.created), append(sp.labels, 0)
	m.list(sp, e, terms, grams, nil, nil, true)
}

func (m *Index) space(id string) *space {
	sp := m.spaces[id]
	if sp == nil {
		sp = &space{terms: map[string]*ordlist.List{}, grams: map[uint32]*ordlist.List{}}
		m.spaces[id] = sp
	}
	return sp
}

// change moves e, listed as prev, to t's lists: the usual change (a
// status, a label, a comment) leaves and joins the lists of what changed
// only. Comments added, the usual change of text, add their pieces to the
// lists that lack e; a text changed otherwise has its pieces diffed whole.
func (m *Index) change(sp *space, e *entry, prev, t *ticketsv1.Ticket) {
	oldTerms, newTerms := m.termsOf(prev), m.termsOf(t)
	m.unlist(sp, e, oldTerms, nil, newTerms, nil)
	m.list(sp, e, newTerms, nil, oldTerms, nil, false)
	added, appended := addedTexts(prev, t)
	if m.noSearch {
		return
	}
	if appended {
		for _, g := range gramsOfTexts(added) {
			l := sp.grams[g]
			if l == nil {
				l = &ordlist.List{}
				sp.grams[g] = l
			}
			if _, in := sp.find(l, e); !in {
				sp.insert(l, e)
			}
		}
		return
	}
	oldGrams, newGrams := m.gramsOf(prev), m.gramsOf(t)
	m.unlist(sp, e, nil, oldGrams, nil, newGrams)
	m.list(sp, e, nil, newGrams, nil, oldGrams, false)
}

// list adds e to the lists of terms and grams it is not in yet (those not
// in hadTerms, hadGrams), and to the list of all when new.
func (m *Index) list(sp *space, e *entry, terms []string, grams []uint32, hadTerms []string, hadGrams []uint32, isNew bool) {
	if isNew {
		sp.place(e)
	}
	for _, term := range terms {
		if !slices.Contains(hadTerms, term) {
			l := sp.terms[term]
			if l == nil {
				l = &ordlist.List{}
				sp.terms[strings.Clone(term)] = l
			}
			sp.insert(l, e)
		}
	}
	for _, g := range grams {
		if _, had := slices.BinarySearch(hadGrams, g); !had {
			l := sp.grams[g]
			if l == nil {
				l = &ordlist.List{}
				sp.grams[g] = l
			}
			sp.insert(l, e)
		}
	}
}

// unlist takes e out of the lists of terms and grams it is to leave (those
// not in keepTerms, keepGrams).
func (m *Index) unlist(sp *space, e *entry, terms []string, grams []uint32, keepTerms []string, keepGrams []uint32) {
	for _, term := range terms {
		if !slices.Contains(keepTerms, term) {
			if l := sp.terms[term]; l != nil && sp.remove(l, e) && l.Len() == 0 {
				delete(sp.terms, term)
			}
		}
	}
	for _, g := range grams {
		if _, keep := slices.BinarySearch(keepGrams, g); !keep {
			if l := sp.grams[g]; l != nil && sp.remove(l, e) && l.Len() == 0 {
				delete(sp.grams, g)
			}
		}
	}
}

// before reports whether ordinal o stands before e in the newest-first
// order's reverse (lists run oldest first).
func (sp *space) before(o uint32, created int64, id string) bool {
	if c := sp.created[o]; c != created {
		return c < created
	}
	return sp.entries[o].id < id
}

// less reports whether listed ordinal a stands before listed ordinal b in
// the lists' order. (A shortcut for entries known to have come in order,
// comparing ordinals, cost a live index a third more than this one read:
// the branch mispredicted wherever the two kinds mix.)
func (sp *space) less(a, b uint32) bool {
	return sp.labels[a] < sp.labels[b]
}

// insert puts e in l at its place.
func (sp *space) insert(l *ordlist.List, e *entry) {
	// The usual case (a replay, a new ticket): the newest of the list.
	if l.Len() == 0 || sp.before(l.Last(), e.created, e.id) {
		sp.append(l, e.ord)
		return
	}
	c := l.Search(func(o uint32) bool { return !sp.before(o, e.created, e.id) })
	l.Insert(c, e.ord)
}

// append puts o at l's end.
func (sp *space) append(l *ordlist.List, o uint32) {
	if sp.building {
		l.AppendBuilding(o)
	} else {
		l.Append(o)
	}
}

// remove takes e out of l, and reports whether it was there.
func (sp *space) remove(l *ordlist.List, e *entry) bool {
	if c, ok := sp.find(l, e); ok {
		l.Remove(c)
		return true
	}
	return false
}

// find is the cursor of e in l, if l holds it. Positions are unique (a
// ticket id is), so e is where its position would go.
func (sp *space) find(l *ordlist.List, e *entry) (ordlist.Cursor, bool) {
	found := false
	c := l.Seek(func(o uint32) bool { return !sp.before(o, e.created, e.id) }, func(o uint32) bool {
		found = o == e.ord
		return false
	})
	return c, found
}

// walk calls fn with the ordinals of l's tickets newest first, from the
// first that stands strictly after pos in that order (from the newest when
// pos is nil), until fn returns false.
func (sp *space) walk(l *ordlist.List, pos *app.Position, fn func(o uint32) bool) {
	c := l.End()
	if pos != nil {
		c = l.Search(func(o uint32) bool { return !sp.before(o, pos.Created, pos.ID) })
	}
	l.Backward(c, fn)
}

// agentTest is keep on an entry's agent (its name's number), asked once
// per agent in a page: the walk passes a deleted agent's tickets by
// without reading them. The caller holds m.mu.
func (m *Index) agentTest(keep func(agentID string) bool) func(agent uint32) bool {
	if keep == nil {
		return func(uint32) bool { return true }
	}
	known := map[uint32]bool{}
	return func(agent uint32) bool {
		kept, ok := known[agent]
		if !ok {
			kept = keep(m.names[agent])
			known[agent] = kept
		}
		return kept
	}
}

// Page walks the query's shortest list from its cursor, testing each
// ticket, until it has the page and one more.
func (m *Index) Page(_ context.Context, q app.Query) ([]*ticketsv1.Ticket, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	sp := m.spaces[q.WorkspaceID]
	if sp == nil {
		return nil, false, nil
	}
	p, ok := m.plan(sp, q.Filter)
	if !ok {
		return nil, false, nil
	}
	var out []*ticketsv1.Ticket
	more := false
	var err error
	keepAgent := m.agentTest(q.KeepAgent)
	visit := func(source *ordlist.List) func(uint32) bool {
		in := p.readers(source)
		return func(o uint32) bool {
			if !p.passes(sp, o, in) || !keepAgent(sp.entries[o].agent) {
				return true
			}
			var t *ticketsv1.Ticket
			if t, err = m.ticket(sp.entries[o]); err != nil {
				return false
			}
			if !q.Filter.Matches(t) || (q.Keep != nil && !q.Keep(t)) {
				return true
			}
			if len(out) == q.Limit {
				more = true
				return false
			}
			out = append(out, t)
			return true
		}
	}
	if !q.ByPriority {
		source := p.shortest(&sp.all)
		sp.walk(source, after(q.After), visit(source))
		return out, more, err
	}
	// Most urgent first: each priority's tickets newest first, the
	// cursor's priority from the cursor, the ones after it whole.
	for rank := len(domain.Priorities); rank >= 0 && !more && err == nil; rank-- {
		if q.After != nil && rank > q.After.Rank || !p.allowsRank(rank) {
			continue
		}
		rankList := sp.terms[rankTerm(rank)]
		if rankList == nil {
			continue
		}
		var from *app.Position
		if q.After != nil && rank == q.After.Rank {
			from = q.After
		}
		p.rank, p.byFields = rank, true
		source := p.shortest(rankList)
		sp.walk(source, from, visit(source))
	}
	return out, more, err
}

// after is a cursor's place in the newest-first order, or nil.
func after(pos *app.Position) *app.Position {
	if pos == nil {
		return nil
	}
	return &app.Position{Created: pos.Created, ID: pos.ID}
}

// ActiveTicket is the newest active ticket of an agent on a conversation:
// a walk of the conversation's list, which holds a handful.
func (m *Index) ActiveTicket(_ context.Context, workspaceID, agentID, conversationID string) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	sp := m.spaces[workspaceID]
	if sp == nil {
		return "", nil
	}
	l := sp.terms[convTerm(conversationID)]
	if l == nil {
		return "", nil
	}
	agent, known := m.nameIDs[agentID]
	best := ""
	sp.walk(l, nil, func(o uint32) bool {
		if e := sp.entries[o]; known && e.agent == agent && domain.IsActive(m.names[e.status]) {
			best = e.id
			return false
		}
		return true
	})
	return best, nil
}
