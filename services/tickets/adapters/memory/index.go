package memory

import (
	"context"
	"sync"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Index is the read model kept in memory: every live ticket in
// B-trees ordered as the listings are (newest first, most urgent first),
// per workspace and per agent, so a page walks from its cursor and stops
// once it has the page. It is fed from the TICKETS stream (each ticket's
// last event at start, then live) and by the service's own writes, and
// serves where the store cannot index (the embedded FerretDB scans every
// document of a filtered query).
type Index struct {
	mu      sync.RWMutex
	tickets map[string]stored          // ticket id → its newest state
	spaces  map[string]*workspaceIndex // workspace id → its orders
}

type stored struct {
	seq uint64
	t   *ticketsv1.Ticket // nil once deleted
}

// orders are the two listing orders of one set of tickets.
type orders struct{ newest, urgent *btree.BTreeG[entry] }

type entry struct {
	pos app.Position
	t   *ticketsv1.Ticket
}

// A tree holds descending positions: ascending iteration is the listing's
// order.
func descending(a, b entry) bool { return a.pos.Compare(b.pos) > 0 }

func newOrders() *orders {
	return &orders{newest: btree.NewG(32, descending), urgent: btree.NewG(32, descending)}
}

func (o *orders) put(t *ticketsv1.Ticket) {
	o.newest.ReplaceOrInsert(entry{app.PositionOf(t, false), t})
	o.urgent.ReplaceOrInsert(entry{app.PositionOf(t, true), t})
}

func (o *orders) remove(t *ticketsv1.Ticket) {
	o.newest.Delete(entry{pos: app.PositionOf(t, false)})
	o.urgent.Delete(entry{pos: app.PositionOf(t, true)})
}

type workspaceIndex struct {
	all    *orders
	agents map[string]*orders
	// active holds the active tickets of each agent's conversations:
	// agent/conversation → ticket ids.
	active map[string]map[string]bool
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{tickets: map[string]stored{}, spaces: map[string]*workspaceIndex{}}
}

// Put records t as of seq; older or equal sequences are ignored.
func (m *Index) Put(_ context.Context, seq uint64, t *ticketsv1.Ticket) error {
	t = proto.Clone(t).(*ticketsv1.Ticket) // callers keep theirs
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, known := m.tickets[t.TicketId]
	if known && prev.seq >= seq {
		return nil
	}
	ws := m.space(t.WorkspaceId)
	if prev.t != nil {
		ws.all.remove(prev.t)
		ws.agent(prev.t.AgentId).remove(prev.t)
		ws.setActive(prev.t, false)
	}
	if t.DeletedAtUnixSecs != nil {
		m.tickets[t.TicketId] = stored{seq: seq}
		return nil
	}
	m.tickets[t.TicketId] = stored{seq: seq, t: t}
	ws.all.put(t)
	ws.agent(t.AgentId).put(t)
	ws.setActive(t, true)
	return nil
}

func (m *Index) space(id string) *workspaceIndex {
	ws := m.spaces[id]
	if ws == nil {
		ws = &workspaceIndex{all: newOrders(), agents: map[string]*orders{}, active: map[string]map[string]bool{}}
		m.spaces[id] = ws
	}
	return ws
}

func (ws *workspaceIndex) agent(id string) *orders {
	o := ws.agents[id]
	if o == nil {
		o = newOrders()
		ws.agents[id] = o
	}
	return o
}

func (ws *workspaceIndex) setActive(t *ticketsv1.Ticket, on bool) {
	if !domain.IsActive(t.Status) {
		return
	}
	for _, conv := range t.ConversationIds {
		key := t.AgentId + "/" + conv
		if on {
			if ws.active[key] == nil {
				ws.active[key] = map[string]bool{}
			}
			ws.active[key][t.TicketId] = true
		} else if set := ws.active[key]; set != nil {
			delete(set, t.TicketId)
			if len(set) == 0 {
				delete(ws.active, key)
			}
		}
	}
}

// Page walks the query's order from its cursor, testing each ticket,
// until it has the page and one more.
func (m *Index) Page(_ context.Context, q app.Query) ([]*ticketsv1.Ticket, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ws := m.spaces[q.WorkspaceID]
	if ws == nil {
		return nil, false, nil
	}
	o := ws.all
	if q.Filter.AgentID != "" {
		if o = ws.agents[q.Filter.AgentID]; o == nil {
			return nil, false, nil
		}
	}
	tree := o.newest
	if q.ByPriority {
		tree = o.urgent
	}
	var out []*ticketsv1.Ticket
	more := false
	visit := func(e entry) bool {
		if q.After != nil && e.pos == *q.After {
			return true
		}
		if !q.Filter.Matches(e.t) || (q.Keep != nil && !q.Keep(e.t)) {
			return true
		}
		if len(out) == q.Limit {
			more = true
			return false
		}
		out = append(out, e.t)
		return true
	}
	if q.After != nil {
		tree.AscendGreaterOrEqual(entry{pos: *q.After}, visit)
	} else {
		tree.Ascend(visit)
	}
	return out, more, nil
}

// ActiveTicket is the newest active ticket of an agent on a conversation.
func (m *Index) ActiveTicket(_ context.Context, workspaceID, agentID, conversationID string) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ws := m.spaces[workspaceID]
	if ws == nil {
		return "", nil
	}
	best := ""
	var bestPos app.Position
	for id := range ws.active[agentID+"/"+conversationID] {
		if pos := app.PositionOf(m.tickets[id].t, false); best == "" || pos.Compare(bestPos) > 0 {
			best, bestPos = id, pos
		}
	}
	return best, nil
}
