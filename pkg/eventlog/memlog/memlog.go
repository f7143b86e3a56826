// Package memlog is the event store in memory: the eventlog port for
// use-case tests and single-process tools, with JetStream's semantics
// (per-subject expected sequence, command-id dedup window) and none of
// its durability.
package memlog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
)

// Store is one log in memory. The zero value is not usable; call New.
type Store struct {
	// Window is how long a command id is remembered (JetStream's
	// duplicate window); beyond it a retry is found in the subject's
	// history instead, as on JetStream.
	Window time.Duration
	// Now is the store's clock.
	Now func() time.Time

	mu        sync.Mutex
	recs      []eventlog.Record // recs[seq-1]
	bySubject map[string][]uint64
	seen      map[string]seen // command id → where and when it was stored
}

type seen struct {
	seq uint64
	at  time.Time
}

// New is an empty store remembering command ids for ten minutes, as the
// JetStream streams do by default.
func New() *Store {
	return &Store{Window: 10 * time.Minute, Now: time.Now, bySubject: map[string][]uint64{}, seen: map[string]seen{}}
}

var _ eventlog.Store = (*Store)(nil)

// Append implements eventlog.Store.
func (s *Store) Append(ctx context.Context, subject string, expectedSeq uint64, commandID string, ev eventlog.Event) (eventlog.Appended, error) {
	if err := ctx.Err(); err != nil {
		return eventlog.Appended{}, err
	}
	if ev.ID == "" {
		ev.ID = ids.New("evt")
	}
	msgID := commandID
	if msgID == "" {
		msgID = ev.ID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	if d, ok := s.seen[msgID]; ok && now.Sub(d.at) < s.Window {
		return eventlog.Appended{Seq: d.seq, Duplicate: true}, nil
	}
	if s.lastOf(subject) != expectedSeq && expectedSeq != eventlog.AnySeq {
		// A retried command beyond the window: found on its subject.
		for _, seq := range slices.Backward(s.bySubject[subject]) {
			if commandID != "" && s.recs[seq-1].CommandID == commandID {
				return eventlog.Appended{Seq: seq, Duplicate: true}, nil
			}
		}
		return eventlog.Appended{}, fmt.Errorf("%w: %s at %d", eventlog.ErrConflict, subject, expectedSeq)
	}
	return eventlog.Appended{Seq: s.store(subject, msgID, ev, now)}, nil
}

// AppendAll implements eventlog.Store: every check before any write, as
// JetStream checks an atomic batch before it commits it.
func (s *Store) AppendAll(ctx context.Context, batch []eventlog.Write) ([]eventlog.Appended, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := eventlog.CheckBatch(batch); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	evs, msgIDs := make([]eventlog.Event, len(batch)), make([]string, len(batch))
	for i, w := range batch {
		evs[i], msgIDs[i] = w.Event, w.CommandID
		if evs[i].ID == "" {
			evs[i].ID = ids.New("evt")
		}
		if msgIDs[i] == "" {
			msgIDs[i] = evs[i].ID
		}
		if d, ok := s.seen[msgIDs[i]]; ok && now.Sub(d.at) < s.Window {
			return nil, fmt.Errorf("%w: command %s stored before", eventlog.ErrConflict, w.CommandID)
		}
		if w.ExpectedSeq != eventlog.AnySeq && s.lastOf(w.Subject) != w.ExpectedSeq {
			return nil, fmt.Errorf("%w: %s at %d", eventlog.ErrConflict, w.Subject, w.ExpectedSeq)
		}
	}
	out := make([]eventlog.Appended, len(batch))
	for i, w := range batch {
		out[i].Seq = s.store(w.Subject, msgIDs[i], evs[i], now)
	}
	return out, nil
}

// lastOf is subject's last sequence (0: none). Called with mu held.
func (s *Store) lastOf(subject string) uint64 {
	if hist := s.bySubject[subject]; len(hist) > 0 {
		return hist[len(hist)-1]
	}
	return 0
}

// store appends ev to subject and answers its sequence. Called with mu
// held.
func (s *Store) store(subject, msgID string, ev eventlog.Event, now time.Time) uint64 {
	seq := uint64(len(s.recs)) + 1
	s.recs = append(s.recs, eventlog.Record{
		Seq: seq, Subject: subject, Type: ev.Type, EventID: ev.ID, Workspace: ev.Workspace,
		CommandID: msgID, Header: maps.Clone(ev.Header), Data: slices.Clone(ev.Data), Time: now,
	})
	s.bySubject[subject] = append(s.bySubject[subject], seq)
	s.seen[msgID] = seen{seq: seq, at: now}
	return seq
}

// Last implements eventlog.Store.
func (s *Store) Last(ctx context.Context, subject string) (eventlog.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return eventlog.Record{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hist := s.bySubject[subject]
	if len(hist) == 0 {
		return eventlog.Record{}, false, nil
	}
	return s.recs[hist[len(hist)-1]-1], true, nil
}

// At implements eventlog.Store.
func (s *Store) At(ctx context.Context, seq uint64) (eventlog.Record, error) {
	if err := ctx.Err(); err != nil {
		return eventlog.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq == 0 || seq > uint64(len(s.recs)) {
		return eventlog.Record{}, fmt.Errorf("no event at %d", seq)
	}
	return s.recs[seq-1], nil
}

// Load implements eventlog.Store.
func (s *Store) Load(ctx context.Context, subject string) ([]eventlog.Record, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hist := s.bySubject[subject]
	if len(hist) == 0 {
		return nil, 0, nil
	}
	out := make([]eventlog.Record, len(hist))
	for i, seq := range hist {
		out[i] = s.recs[seq-1]
	}
	return out, hist[len(hist)-1], nil
}

// FindCommand implements eventlog.Store.
func (s *Store) FindCommand(ctx context.Context, subject, commandID string) (eventlog.Record, bool, error) {
	return eventlog.FindCommand(ctx, s, subject, commandID)
}
