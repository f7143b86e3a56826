package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// ReadModel is the read model kept in memory: each workspace's
// accounts, members and live keys, and each account's live keys, in
// slices sorted in listing order, so a listing copies what it returns
// and a write moves one slot. It is fed from the IDENTITY stream (each
// subject's last event at start, then live) and by the service's own
// writes, and serves where the store cannot index (the embedded FerretDB
// scans every document of a filtered query).
type ReadModel struct {
	mu     sync.RWMutex
	latest map[docKey]stored
	spaces map[string]*listings
}

// docKey names a document: ids are unique per kind within a workspace.
type docKey struct {
	kind        string
	workspaceID string
	id          string
}

type stored struct {
	seq uint64
	doc app.Doc
}

// listings are one workspace's listings, each sorted by position.
type listings struct {
	accounts    sorted[app.AccountDoc]
	users       sorted[app.UserDoc]
	keys        sorted[app.KeyDoc] // live keys only
	accountKeys map[string]*sorted[app.KeyDoc]
}

// NewReadModel returns an empty read model.
func NewReadModel() *ReadModel {
	return &ReadModel{latest: map[docKey]stored{}, spaces: map[string]*listings{}}
}

// Reset empties the model: its stream was made anew (a restore).
func (m *ReadModel) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.latest, m.spaces = map[docKey]stored{}, map[string]*listings{}
}

// Put records doc as of seq; older or equal sequences are ignored.
func (m *ReadModel) Put(_ context.Context, seq uint64, doc app.Doc) error {
	key, doc := keyOf(doc), cloneDoc(doc) // callers keep theirs
	if key.kind == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, known := m.latest[key]
	if known && prev.seq >= seq {
		return nil
	}
	m.latest[key] = stored{seq: seq, doc: doc}
	ws := m.spaces[key.workspaceID]
	if ws == nil {
		ws = &listings{accountKeys: map[string]*sorted[app.KeyDoc]{}}
		m.spaces[key.workspaceID] = ws
	}
	if known {
		ws.remove(prev.doc)
	}
	ws.add(doc)
	return nil
}

func keyOf(doc app.Doc) docKey {
	p := doc.Position()
	switch doc.(type) {
	case app.AccountDoc:
		return docKey{"account", p.WorkspaceID, p.ID}
	case app.UserDoc:
		return docKey{"user", p.WorkspaceID, p.ID}
	case app.KeyDoc:
		return docKey{"key", p.WorkspaceID, p.ID}
	}
	return docKey{}
}

// cloneDoc copies what a key shares with its caller (slices, pointers).
func cloneDoc(doc app.Doc) app.Doc {
	k, ok := doc.(app.KeyDoc)
	if !ok {
		return doc
	}
	k.Permissions, k.AllowedIPs = slices.Clone(k.Permissions), slices.Clone(k.AllowedIPs)
	k.ExpiresAtUnix, k.RateLimitPerMinute, k.RateLimitPerHour = clonePtr(k.ExpiresAtUnix), clonePtr(k.RateLimitPerMinute), clonePtr(k.RateLimitPerHour)
	return k
}

func clonePtr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (ws *listings) add(doc app.Doc) {
	switch d := doc.(type) {
	case app.AccountDoc:
		ws.accounts.put(d)
	case app.UserDoc:
		ws.users.put(d)
	case app.KeyDoc:
		if d.Revoked {
			return
		}
		ws.keys.put(d)
		ak := ws.accountKeys[d.ServiceAccountUserID]
		if ak == nil {
			ak = &sorted[app.KeyDoc]{}
			ws.accountKeys[d.ServiceAccountUserID] = ak
		}
		ak.put(d)
	}
}

func (ws *listings) remove(doc app.Doc) {
	switch d := doc.(type) {
	case app.AccountDoc:
		ws.accounts.remove(d)
	case app.UserDoc:
		ws.users.remove(d)
	case app.KeyDoc:
		ws.keys.remove(d)
		if ak := ws.accountKeys[d.ServiceAccountUserID]; ak != nil {
			if ak.remove(d); len(ak.docs) == 0 {
				delete(ws.accountKeys, d.ServiceAccountUserID)
			}
		}
	}
}

// sorted is one listing: documents in ascending position.
type sorted[T app.Doc] struct{ docs []T }

func (s *sorted[T]) find(d T) (int, bool) {
	return slices.BinarySearchFunc(s.docs, d.Position(), func(e T, p app.Position) int { return e.Position().Compare(p) })
}

func (s *sorted[T]) put(d T) {
	if i, found := s.find(d); found {
		s.docs[i] = d
	} else {
		s.docs = slices.Insert(s.docs, i, d)
	}
}

func (s *sorted[T]) remove(d T) {
	if i, found := s.find(d); found {
		s.docs = slices.Delete(s.docs, i, i+1)
	}
}

// list copies a listing out from under the lock.
func list[T app.Doc](m *ReadModel, pick func(*listings) *sorted[T], workspaceID string) []T {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ws := m.spaces[workspaceID]
	if ws == nil {
		return nil
	}
	if s := pick(ws); s != nil {
		return slices.Clone(s.docs)
	}
	return nil
}

// ListAccounts returns a workspace's service accounts, oldest first.
func (m *ReadModel) ListAccounts(_ context.Context, workspaceID string) ([]app.AccountDoc, error) {
	return list(m, func(ws *listings) *sorted[app.AccountDoc] { return &ws.accounts }, workspaceID), nil
}

// ListKeys returns the live keys of a workspace, or of one account when
// accountID is set, oldest first.
func (m *ReadModel) ListKeys(_ context.Context, workspaceID, accountID string) ([]app.KeyDoc, error) {
	return list(m, func(ws *listings) *sorted[app.KeyDoc] {
		if accountID == "" {
			return &ws.keys
		}
		return ws.accountKeys[accountID]
	}, workspaceID), nil
}

// ListUsers returns a workspace's members (people), oldest first.
func (m *ReadModel) ListUsers(_ context.Context, workspaceID string) ([]app.UserDoc, error) {
	return list(m, func(ws *listings) *sorted[app.UserDoc] { return &ws.users }, workspaceID), nil
}

// Count returns the length of one of a workspace's listings.
func (m *ReadModel) Count(_ context.Context, workspaceID string, l app.Listing) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ws := m.spaces[workspaceID]
	if ws == nil {
		return 0, nil
	}
	switch l {
	case app.Accounts:
		return len(ws.accounts.docs), nil
	case app.LiveKeys:
		return len(ws.keys.docs), nil
	case app.Members:
		return len(ws.users.docs), nil
	}
	return 0, fmt.Errorf("identity read model: no listing %d", l)
}
