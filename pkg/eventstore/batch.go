package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
)

// The headers of JetStream's atomic batch publish (nats-server 2.12+): a
// batch's messages are staged under its id, numbered from 1, and stored
// together, every check passed, when the one marked commit arrives, or
// not at all.
const (
	headerBatchID       = "Nats-Batch-Id"
	headerBatchSequence = "Nats-Batch-Sequence"
	headerBatchCommit   = "Nats-Batch-Commit"
)

// JetStream's answers to a batch that are not failures of the store
// (numbers from nats-server's generated error table).
const (
	// A message id of the batch was stored before: a retried command.
	batchHasDuplicate jetstream.ErrorCode = 10201
	// A message of the batch did not arrive (the connection moved while
	// it was sent): nothing was stored, and sending it again may work.
	batchIncomplete jetstream.ErrorCode = 10176
	// The stream is committing as many batches as it takes at once.
	batchesInFlight jetstream.ErrorCode = 10210
)

// AppendAll implements eventlog.Store with one atomic batch: every
// message but the last is sent without waiting, on the connection that
// then asks for the commit, so they reach the stream in order; the
// commit's acknowledgement is the last message's sequence, the others
// precede it one by one.
func (s *Store) AppendAll(ctx context.Context, batch []eventlog.Write) ([]eventlog.Appended, error) {
	if err := eventlog.CheckBatch(batch); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nc, id := s.js.Conn(), ids.New("batch")
	var ack *jetstream.PubAck
	for i, w := range batch {
		msg := NewMsg(w.Subject, w.CommandID, w.Event)
		msg.Header.Set(jetstream.ExpectedStreamHeader, s.stream)
		if w.ExpectedSeq != AnySeq {
			msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(w.ExpectedSeq, 10))
		}
		msg.Header.Set(headerBatchID, id)
		msg.Header.Set(headerBatchSequence, strconv.Itoa(i+1))
		if i < len(batch)-1 {
			if err := nc.PublishMsg(msg); err != nil {
				return nil, fmt.Errorf("append a batch of %d: %w", len(batch), Classify(err))
			}
			continue
		}
		msg.Header.Set(headerBatchCommit, "1")
		var err error
		if ack, err = s.js.PublishMsg(ctx, msg); err != nil {
			return nil, batchError(len(batch), err)
		}
	}
	out := make([]eventlog.Appended, len(batch))
	first := ack.Sequence - uint64(len(batch)) + 1
	for i := range out {
		out[i].Seq = first + uint64(i)
	}
	return out, nil
}

// batchError is what a refused batch means to the port: a subject moved
// on or a command stored before is a conflict, a batch cut short may go
// through when sent again.
func batchError(n int, err error) error {
	var apiErr *jetstream.APIError
	switch {
	case IsConflict(err), errors.As(err, &apiErr) && (apiErr.ErrorCode == batchHasDuplicate || apiErr.ErrorCode == duplicateInProcess):
		return fmt.Errorf("%w: a batch of %d: %w", eventlog.ErrConflict, n, err)
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == batchIncomplete || apiErr.ErrorCode == batchesInFlight):
		return fmt.Errorf("append a batch of %d: %w", n, unavailable{err})
	}
	return fmt.Errorf("append a batch of %d: %w", n, Classify(err))
}
