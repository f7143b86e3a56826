// Package adapters connects tickets to its stores: the TICKETS stream, its
// read models (MongoDB, or an in-memory ordered index), and the directory
// of agents, members and conversations it learns from other services'
// streams.
package adapters

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// TicketsCollection is the read model of tickets. It is _v2 since every
// filtered field is stored (v1 kept only workspace, agent and status):
// its projector is a new durable consumer that builds it from the stream.
const TicketsCollection = "tickets_v2"

// ProjectorDurable is the durable consumer that writes TicketsCollection.
const ProjectorDurable = "tickets-readmodel-v2"

// TicketDoc stores a ticket's whole state (the proto bytes) beside every
// field listings filter and sort on, so the store evaluates them.
type TicketDoc struct {
	ID              string   `bson:"_id"`
	WorkspaceID     string   `bson:"workspace_id"`
	AgentID         string   `bson:"agent_id"`
	Status          string   `bson:"status"`
	Deleted         bool     `bson:"deleted"`
	CreatedMS       int64    `bson:"created_at_unix_ms"`
	PriorityRank    int      `bson:"priority_rank"`
	Priority        string   `bson:"priority"`
	Source          string   `bson:"source"`
	AssigneeUserID  *string  `bson:"assignee_user_id"`
	OwnerUserID     string   `bson:"owner_user_id"`
	IssueType       string   `bson:"issue_type"`
	Labels          []string `bson:"labels"`
	ConversationIDs []string `bson:"conversation_ids"`
	MergedInto      string   `bson:"merged_into_ticket_id"`
	State           []byte   `bson:"state"`
}

// DocOf maps ticket state to its stored form.
func DocOf(t *ticketsv1.Ticket) TicketDoc {
	state, _ := proto.MarshalOptions{Deterministic: true}.Marshal(t)
	return TicketDoc{
		ID: t.GetTicketId(), WorkspaceID: t.GetWorkspaceId(), AgentID: t.GetAgentId(), Status: t.GetStatus(),
		Deleted: t.DeletedAtUnixSecs != nil, CreatedMS: t.GetCreatedAtUnixMs(),
		PriorityRank: domain.PriorityRank(t.GetPriority()), Priority: t.GetPriority(), Source: t.GetSource(),
		AssigneeUserID: t.AssigneeUserId, OwnerUserID: t.GetOwnerUserId(), IssueType: t.GetIssueType(),
		Labels: t.GetLabels(), ConversationIDs: t.GetConversationIds(), MergedInto: t.GetMergedIntoTicketId(),
		State: state,
	}
}

// Handler is the projection handler of the TICKETS stream.
var Handler = projection.States(func(t *ticketsv1.Ticket) (string, any) { return t.GetTicketId(), DocOf(t) })

// ReadModel is the MongoDB read model: filters, order and keyset cursor
// go into the query, each order has its compound index, and a page reads
// the page (plus what the residual Keep test drops).
type ReadModel struct{ Tickets *mongo.Collection }

// NewReadModel opens the collection and creates an index for every query
// shape: each order of a workspace and of an agent, and the conversation
// lookup of a create.
func NewReadModel(ctx context.Context, db *mongo.Database) (*ReadModel, error) {
	c := db.Collection(TicketsCollection)
	idx := func(keys ...string) mongo.IndexModel {
		d := bson.D{}
		for _, k := range keys {
			dir := -1
			if k == "workspace_id" || k == "agent_id" || k == "deleted" || k == "conversation_ids" {
				dir = 1
			}
			d = append(d, bson.E{Key: k, Value: dir})
		}
		return mongo.IndexModel{Keys: d}
	}
	err := mongox.EnsureIndexes(ctx, c,
		idx("workspace_id", "deleted", "created_at_unix_ms", "_id"),
		idx("workspace_id", "deleted", "priority_rank", "created_at_unix_ms", "_id"),
		idx("workspace_id", "agent_id", "deleted", "created_at_unix_ms", "_id"),
		idx("workspace_id", "agent_id", "deleted", "priority_rank", "created_at_unix_ms", "_id"),
		idx("workspace_id", "conversation_ids", "agent_id", "deleted"),
	)
	if err != nil {
		return nil, err
	}
	return &ReadModel{Tickets: c}, nil
}

// Put writes ticket state as of stream sequence seq.
func (rm *ReadModel) Put(ctx context.Context, seq uint64, t *ticketsv1.Ticket) error {
	_, err := projection.Upsert(ctx, rm.Tickets, t.GetTicketId(), seq, DocOf(t))
	return err
}

// Filter is the store query of q, without its cursor.
func Filter(q app.Query) bson.D {
	f := q.Filter
	and := bson.A{bson.D{{Key: "workspace_id", Value: q.WorkspaceID}}, bson.D{{Key: "deleted", Value: false}}}
	eq := func(key string, v any) { and = append(and, bson.D{{Key: key, Value: v}}) }
	if f.AgentID != "" {
		eq("agent_id", f.AgentID)
	}
	if f.Status != "" {
		eq("status", f.Status)
	}
	switch f.Assignee {
	case "":
	case "unassigned":
		eq("assignee_user_id", nil) // null or absent
	default:
		eq("assignee_user_id", f.Assignee)
	}
	if f.ConversationID != "" {
		eq("conversation_ids", f.ConversationID) // an element of the array
	}
	if len(f.Sources) > 0 {
		eq("source", bson.D{{Key: "$in", Value: f.Sources}})
	}
	if len(f.Priorities) > 0 {
		eq("priority", bson.D{{Key: "$in", Value: f.Priorities}})
	}
	switch f.OwnerUserID {
	case "":
	case "agent":
		eq("source", domain.SourceAgent)
	default:
		eq("owner_user_id", f.OwnerUserID)
	}
	if f.IssueType != "" {
		eq("issue_type", f.IssueType)
	}
	if f.Label != "" {
		eq("labels", f.Label)
	}
	if f.MergedInto != "" {
		eq("merged_into_ticket_id", f.MergedInto)
	}
	return bson.D{{Key: "$and", Value: and}}
}

// Sort is the store order of q: descending position.
func Sort(q app.Query) bson.D {
	if q.ByPriority {
		return mongox.Order(true, "priority_rank", "created_at_unix_ms", "_id")
	}
	return mongox.Order(true, "created_at_unix_ms", "_id")
}

// before is the keyset condition "strictly after p in descending order".
func before(p app.Position, byPriority bool) bson.D {
	keys := []mongox.Key{{Field: "created_at_unix_ms", Value: p.Created}, {Field: "_id", Value: p.ID}}
	if byPriority {
		keys = append([]mongox.Key{{Field: "priority_rank", Value: p.Rank}}, keys...)
	}
	return mongox.After(true, keys...)
}

// Page runs the query from the cursor in batches until it has a page and
// one more (to know more follow), or the matches run out.
func (rm *ReadModel) Page(ctx context.Context, q app.Query) ([]*ticketsv1.Ticket, bool, error) {
	base := Filter(q)
	batch := int64(q.Limit + 1)
	after := q.After
	var out []*ticketsv1.Ticket
	for {
		filter := base
		if after != nil {
			filter = bson.D{{Key: "$and", Value: bson.A{base, before(*after, q.ByPriority)}}}
		}
		cur, err := rm.Tickets.Find(ctx, filter, options.Find().SetSort(Sort(q)).SetLimit(batch))
		if err != nil {
			return nil, false, err
		}
		var docs []TicketDoc
		if err := cur.All(ctx, &docs); err != nil {
			return nil, false, err
		}
		for _, d := range docs {
			t := &ticketsv1.Ticket{}
			if err := proto.Unmarshal(d.State, t); err != nil {
				return nil, false, err
			}
			if q.Residual(t) {
				out = append(out, t)
				if len(out) > q.Limit {
					return out[:q.Limit], true, nil
				}
			}
			pos := app.PositionOf(t, q.ByPriority)
			after = &pos
		}
		if int64(len(docs)) < batch {
			return out, false, nil
		}
	}
}

// ActiveTicket finds the newest active ticket of an agent on a
// conversation.
func (rm *ReadModel) ActiveTicket(ctx context.Context, workspaceID, agentID, conversationID string) (string, error) {
	filter := bson.D{{Key: "workspace_id", Value: workspaceID}, {Key: "conversation_ids", Value: conversationID},
		{Key: "agent_id", Value: agentID}, {Key: "deleted", Value: false},
		{Key: "status", Value: bson.D{{Key: "$in", Value: domain.ActiveStatuses}}}}
	var d struct {
		ID string `bson:"_id"`
	}
	err := rm.Tickets.FindOne(ctx, filter, options.FindOne().SetSort(mongox.Order(true, "created_at_unix_ms", "_id"))).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", nil
	}
	return d.ID, err
}
