package app

import (
	"context"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
)

// QASource is a stream the QA worker follows.
type QASource string

// The QA worker's sources.
const (
	// QARuns is the testing service's failed runs: each failed run's
	// result, which the runners store a second time for its readers alone
	// (events.RunFailureSubject).
	QARuns QASource = "runs"
	// QAPlatform is the platform events of QAPlatformEvents.
	QAPlatform QASource = "platform"
	// QATickets is the tickets' own states, for clustering.
	QATickets QASource = "clustering"
)

// QAPlatformEvents are the platform events the QA worker reads: the
// others can raise no ticket.
var QAPlatformEvents = []string{"escalation_triggered", "conversation_ended"}

// QAMessage is one message of a source as the QA worker reads it.
type QAMessage struct {
	Subject string
	// Seq is its sequence in its stream, Stored when the stream took it.
	Seq    uint64
	Stored time.Time
	// Traceparent names the trace that produced it ("": none).
	Traceparent string
	// Data is the body as stored: a JSON envelope on QAPlatform.
	Data []byte
	// Event is the body decoded, on the sources of protobuf events
	// (QARuns, QATickets); nil when Err says why it could not be, and on
	// a run or a ticket that DecodesRun or DecodesTicket leaves undecoded.
	Event proto.Message
	Err   error
	// RunStatus is, on QARuns, the run's status as its producer stated it
	// beside the body (events.HeaderRunStatus; "" where it did not).
	RunStatus string
}

// DecodesRun tells whether a feed decodes a run whose producer stated
// status: only a failed run (or one with no stated status) can raise a
// ticket, so the passing runs of a large invocation cost no decoding.
func DecodesRun(status string) bool {
	return status == "" || status == events.RunStatusFailed
}

// DecodesTicket tells whether a feed decodes a TICKETS event, given its
// type and body as stored: the worker clusters only a ticket that needs
// it, and most events carry one that does not (every report, every
// triage change), so those are passed by on one field of the ticket's
// encoding. A body that cannot be read that far is decoded, for the
// decoding to say what is wrong with it.
func DecodesTicket(eventType string, data []byte) bool {
	ticket, ok, err := events.StateBytes[*ticketsv1.Ticket](eventType, data)
	if err != nil {
		return true
	}
	needs := false
	for ok && len(ticket) > 0 {
		num, typ, n := protowire.ConsumeTag(ticket)
		if n < 0 {
			return true
		}
		ticket = ticket[n:]
		if num == needsClustering && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(ticket)
			if n < 0 {
				return true
			}
			needs = v != 0 // the last one stands, as in decoding
			ticket = ticket[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, ticket); n < 0 {
			return true
		}
		ticket = ticket[n:]
	}
	return needs
}

// needsClustering is the number of Ticket's needs_clustering field.
var needsClustering = (&ticketsv1.Ticket{}).ProtoReflect().Descriptor().Fields().ByName("needs_clustering").Number()

// QAFeed is the sources the QA worker follows. Every replica shares each
// source's position, so replicas split the work and a killed one loses
// nothing.
type QAFeed interface {
	// Follow feeds the source's messages, in batches in stream order, to
	// h until ctx ends (then it returns nil). A batch h handles is done
	// for every replica; one h fails is delivered again later, with
	// back-off, and the batch in hand when ctx ends at once, to whichever
	// replica comes next. What is delivered again may come in any order.
	Follow(ctx context.Context, source QASource, h func(ctx context.Context, batch []QAMessage) error) error
}
