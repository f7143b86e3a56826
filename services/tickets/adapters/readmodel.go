// Package adapters connects tickets to its stores: the TICKETS stream, its
// Mongo read model, and the directory of agents, members and
// conversations it learns from other services' streams.
package adapters

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
)

// TicketsCollection is the read model of tickets.
const TicketsCollection = "tickets"

// TicketDoc stores a ticket's whole state (the proto bytes) beside the
// fields listings filter on in the store.
type TicketDoc struct {
	ID          string `bson:"_id"`
	WorkspaceID string `bson:"workspace_id"`
	AgentID     string `bson:"agent_id"`
	Status      string `bson:"status"`
	Deleted     bool   `bson:"deleted"`
	CreatedMS   int64  `bson:"created_at_unix_ms"`
	State       []byte `bson:"state"`
}

// DocOf maps ticket state to its stored form.
func DocOf(t *ticketsv1.Ticket) TicketDoc {
	state, _ := proto.MarshalOptions{Deterministic: true}.Marshal(t)
	return TicketDoc{
		ID: t.GetTicketId(), WorkspaceID: t.GetWorkspaceId(), AgentID: t.GetAgentId(), Status: t.GetStatus(),
		Deleted: t.DeletedAtUnixSecs != nil, CreatedMS: t.GetCreatedAtUnixMs(), State: state,
	}
}

// StateOf extracts ticket state from any ticket event.
func StateOf(msg proto.Message) *ticketsv1.Ticket {
	if m, ok := msg.(interface{ GetTicket() *ticketsv1.Ticket }); ok {
		return m.GetTicket()
	}
	return nil
}

// Handler is the projection handler of the TICKETS stream.
func Handler(_ context.Context, rec eventstore.Record) (string, any, error) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		return "", nil, err
	}
	t := StateOf(msg)
	if t == nil {
		return "", nil, nil
	}
	return t.GetTicketId(), DocOf(t), nil
}

// ReadModel serves ticket listings.
type ReadModel struct{ Tickets *mongo.Collection }

// NewReadModel opens the collection and its indexes.
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	c := db.Collection(TicketsCollection)
	err := mongox.EnsureIndexes(ctx, c,
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "deleted", Value: 1}, {Key: "created_at_unix_ms", Value: -1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "agent_id", Value: 1}, {Key: "created_at_unix_ms", Value: -1}}},
	)
	if err != nil {
		return nil, err
	}
	return &ReadModel{Tickets: c}, nil
}

// Apply writes ticket state as of stream sequence seq.
func (rm *ReadModel) Apply(ctx context.Context, seq uint64, t *ticketsv1.Ticket) error {
	_, err := projection.Upsert(ctx, rm.Tickets, t.GetTicketId(), seq, DocOf(t))
	return err
}

// Candidates returns the live tickets of a workspace (of one agent when
// agentID is set, in one status when status is set); finer filters,
// ordering and paging are applied by the caller.
func (rm *ReadModel) Candidates(ctx context.Context, workspaceID, agentID, status string) ([]*ticketsv1.Ticket, error) {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "deleted", Value: false}}
	if agentID != "" {
		filter = append(filter, bson.E{Key: "agent_id", Value: agentID})
	}
	if status != "" {
		filter = append(filter, bson.E{Key: "status", Value: status})
	}
	cur, err := rm.Tickets.Find(ctx, filter)
	if err != nil {
		return nil, err
	}
	var docs []TicketDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]*ticketsv1.Ticket, 0, len(docs))
	for _, d := range docs {
		t := &ticketsv1.Ticket{}
		if err := proto.Unmarshal(d.State, t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
