package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

func recordOf(seq uint64, subject string, h nats.Header, data []byte, t time.Time) Record {
	return Record{
		Seq: seq, Subject: subject, Header: eventlog.Header(h), Data: data, Time: t,
		Type: h.Get(events.HeaderEventType), EventID: h.Get(events.HeaderEventID), Workspace: h.Get(events.HeaderWorkspaceID),
		CommandID: h.Get(jetstream.MsgIDHeader),
	}
}

// RecordFromMsg reads a record from a consumed message.
func RecordFromMsg(m jetstream.Msg) (Record, error) {
	meta, err := m.Metadata()
	if err != nil {
		return Record{}, err
	}
	return recordWith(m, meta), nil
}

// recordWith is m's record, given its metadata already parsed.
func recordWith(m jetstream.Msg, meta *jetstream.MsgMetadata) Record {
	return recordOf(meta.Sequence.Stream, m.Subject(), m.Headers(), m.Data(), meta.Timestamp)
}

// streams caches stream handles per connection and name: looking a
// stream up is a STREAM.INFO request, which a hot read path (one direct
// get per run) must not pay each time.
var streams sync.Map // streamKey -> jetstream.Stream

type streamKey struct {
	js   jetstream.JetStream
	name string
}

// StreamOf returns a handle on stream name, looked up once per js.
func StreamOf(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	key := streamKey{js, name}
	if s, ok := streams.Load(key); ok {
		return s.(jetstream.Stream), nil
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	streams.Store(key, s)
	return s, nil
}

// Last returns the newest event of subject (one GetMsg). With
// state-carrying events it is the aggregate's current state.
func (s *Store) Last(ctx context.Context, subject string) (Record, bool, error) {
	m, err := GetMsg(ctx, s.js, s.stream, MsgRequest{LastFor: subject})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("last of %s: %w", subject, err)
	}
	return recordOf(m.Sequence, m.Subject, m.Header, m.Data, m.Time), true, nil
}

// At returns the event stored at seq (one GetMsg).
func (s *Store) At(ctx context.Context, seq uint64) (Record, error) {
	m, err := GetMsg(ctx, s.js, s.stream, MsgRequest{Seq: seq})
	if err != nil {
		return Record{}, fmt.Errorf("%s at %d: %w", s.stream, seq, err)
	}
	return recordOf(m.Sequence, m.Subject, m.Header, m.Data, m.Time), nil
}

// Load returns subject's whole history in order and its last sequence
// (0 for an empty subject). It reads up to the last sequence as of the
// call, so it never waits for events that may never come.
//
// It reads rather than consume (pkg/consume): a bounded read to a known
// sequence on an ordered consumer, nothing acknowledged, nothing left on
// the server when it returns.
func (s *Store) Load(ctx context.Context, subject string) ([]Record, uint64, error) {
	last, found, err := s.Last(ctx, subject)
	if err != nil || !found {
		return nil, 0, err
	}
	str, err := StreamOf(ctx, s.js, s.stream)
	if err != nil {
		return nil, 0, err
	}
	cons, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, 0, err
	}
	var out []Record
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, 0, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			rec, err := RecordFromMsg(m)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, rec)
			if rec.Seq >= last.Seq {
				return out, last.Seq, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, 0, err
		}
		if got == 0 {
			return nil, 0, fmt.Errorf("load %s: stalled before sequence %s", subject, strconv.FormatUint(last.Seq, 10))
		}
	}
}
