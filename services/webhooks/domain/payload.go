package domain

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// IngestInput is the body of POST /v1/convai/events.
type IngestInput struct {
	Event     string          `json:"event"`
	Timestamp *string         `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// The range of an ingested event's timestamp: from the Unix epoch (what
// every *_unix_secs field can say) to a day ahead of the receiving clock
// (a producer's clock may run ahead; an event a year ahead is a bug).
var EarliestTimestamp = time.Unix(0, 0).UTC()

const LatestTimestampAhead = 24 * time.Hour

// ParseIngest makes the envelope to publish from an ingestion body
// (already JSON-decoded into in), with the timestamp normalised to UTC
// (now when absent) and data compacted. The body's shape (the event's
// name, data an object, the types of the spec 6.2 fields of its data) is
// the API schema's (EventIngest), checked at the edge; the timestamp's
// grammar is checked here, as a schema does not assert a date-time.
func ParseIngest(in IngestInput, now time.Time) (wire.Envelope, error) {
	env := wire.Envelope{Event: in.Event, Timestamp: wire.FormatTimestamp(now)}
	if in.Timestamp != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.Timestamp)
		if err != nil {
			return wire.Envelope{}, apperr.ValidationErrors{{Loc: []any{"body", "timestamp"},
				Msg: "Input should be an ISO 8601 date-time with a time zone, e.g. 2026-01-02T15:04:05Z", Type: "datetime_parsing"}}
		}
		// Years 0000 and 9999 parse, and every reader would show them,
		// sort by them and age them: an event happened after the Unix
		// epoch and not much past now.
		if t.Before(EarliestTimestamp) || t.After(now.Add(LatestTimestampAhead)) {
			return wire.Envelope{}, apperr.ValidationErrors{{Loc: []any{"body", "timestamp"},
				Msg: "Input should be a date-time from 1970-01-01T00:00:00Z to a day from now", Type: "datetime_range"}}
		}
		env.Timestamp = wire.FormatTimestamp(t)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, in.Data); err != nil {
		return wire.Envelope{}, err
	}
	env.Data = buf.Bytes()
	return env, nil
}

// SampleData is the data of a test delivery of event: valid against the
// event's data schema in the catalog (TestEverySampleMatchesItsCatalogSchema),
// with every spec 6.2 field for the events that define them, a sample
// ticket for the ticket_* events and a sample invocation for the
// invocation outcomes; a small marker object for events whose payload the
// spec does not show.
func SampleData(event string) json.RawMessage {
	switch event {
	case "call_started":
		return json.RawMessage(`{"call_id":"call_test","phone_number":"+15550100","caller_id":"+15550199","agent_id":"agent_test","direction":"inbound","call_source":"phone","metadata":{"caller_location":"US","call_queue":"support"}}`)
	case "call_ended":
		return json.RawMessage(`{"call_id":"call_test","duration_seconds":125,"end_reason":"completed","resolution_status":"resolved","conversation_summary":"The caller asked about billing.","satisfaction_score":4.5,"transcript_available":true,"recording_available":true}`)
	case "conversation_ended":
		return json.RawMessage(`{"conversation_id":"conv_test","call_id":"call_test","agent_id":"agent_test","turn_count":12,"topics_discussed":["billing"],"sentiment_analysis":{"overall_sentiment":"positive","sentiment_score":0.8},"knowledge_base_queries":2,"escalation_occurred":false}`)
	case "escalation_triggered":
		return json.RawMessage(`{"call_id":"call_test","conversation_id":"conv_test","escalation_reason":"customer request","escalation_trigger":"keyword","agent_id":"agent_test","target_queue":"tier2","context_summary":"Billing dispute.","conversation_history":"Available via the API"}`)
	case "conversation_started":
		return json.RawMessage(`{"conversation_id":"conv_test","agent_id":"agent_test","test":true}`)
	case "test_invocation_completed":
		return json.RawMessage(`{"invocation_id":"inv_test","agent_id":"agent_test","agent_name":"Support","branch_id":"","folder_id":"","title":"Nightly","status":"completed","repeat_count":1,"test_run_count":3,"passed_count":2,"failed_count":1,"ran_by_user_email":"ci@example.com","created_at_unix_secs":1767322000,"completed_at_unix_secs":1767322060,"cancelled_at_unix_secs":null,"test":true}`)
	case "test_invocation_cancelled":
		return json.RawMessage(`{"invocation_id":"inv_test","agent_id":"agent_test","agent_name":"Support","branch_id":"","folder_id":"","title":"Nightly","status":"cancelled","repeat_count":1,"test_run_count":3,"passed_count":1,"failed_count":0,"ran_by_user_email":"ci@example.com","created_at_unix_secs":1767322000,"completed_at_unix_secs":null,"cancelled_at_unix_secs":1767322030,"test":true}`)
	}
	if IsTicketEvent(event) {
		return sampleTicketData(event)
	}
	return json.RawMessage(`{"test":true}`)
}

// sampleTicketData is a ticket_* event's sample data: a ticket in the
// shape the API answers it, after the change the event says, and what the
// event adds beside it.
func sampleTicketData(event string) json.RawMessage {
	const at, ws, by = int64(1767322000), "ws_test", "user_test"
	str := func(s string) *string { return &s }
	first, last := at-600, at-540
	t := wire.Ticket{
		AgentqaTicketID: "tkt_test", WorkspaceID: ws, OwnerUserID: by, AgentID: "agent_test", NeedsClustering: true,
		Title: "Quoted the wrong refund window", Labels: []string{"billing"}, ConversationIDs: []string{"conv_test"},
		FirstSeenUnixSecs: &first, LastSeenUnixSecs: &last, QAComment: str("The agent said 60 days; the policy is 30."),
		TicketComments: []wire.Comment{}, TurnComments: []wire.TurnComment{{TurnIndex: 3, Comment: "Wrong policy quoted", CreatedAtUnixSecs: at, OwnerUserID: str(by)}},
		Status: "open", Priority: str("high"),
		PriorityChanges: []wire.Priority{{Priority: str("high"), ChangedByUserID: by, ChangedAtUnixSecs: at}},
		StatusChanges:   []wire.Status{{Status: "open", ChangedByUserID: str(by), ChangedAtUnixSecs: at}},
		Source:          "qa", CreatedAtUnixSecs: at, UpdatedAtUnixSecs: at,
	}
	data := map[string]any{}
	later := at + 60
	switch event {
	case "ticket_updated":
		t.Priority, t.UpdatedAtUnixSecs = str("urgent"), later
		t.PriorityChanges = append(t.PriorityChanges, wire.Priority{Priority: str("urgent"), ChangedByUserID: by, ChangedAtUnixSecs: later})
		data["changed_fields"] = []string{"priority"}
	case "ticket_status_changed":
		t.Status, t.UpdatedAtUnixSecs = "in_progress", later
		t.StatusChanges = append(t.StatusChanges, wire.Status{Status: "in_progress", ChangedByUserID: str(by), ChangedAtUnixSecs: later})
		data["previous_status"] = "open"
	case "ticket_commented":
		t.UpdatedAtUnixSecs = later
		t.TicketComments = append(t.TicketComments, wire.Comment{Comment: "Seen again today.", CreatedAtUnixSecs: later, OwnerUserID: str(by)})
	case "ticket_merged":
		t.UpdatedAtUnixSecs = later
		t.ConversationIDs = append(t.ConversationIDs, "conv_test_2")
		data["target_ticket_id"], data["source_ticket_ids"] = t.AgentqaTicketID, []string{"tkt_test_2"}
	case "ticket_deleted":
		t.DeletedAtUnixSecs = &later
	}
	data["ticket"] = t
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // plain values
	}
	return b
}
