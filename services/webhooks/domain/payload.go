package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/ids"
)

// kind is the JSON type a spec 6.2 data field must have.
type kind int

const (
	kString kind = iota
	kInteger
	kNumber
	kBoolean
	kObject
	kStringArray
	// kID is a string that follows the id grammar (pkg/ids): conversation
	// and agent ids become keys of the services that consume the event.
	kID
)

func (k kind) String() string {
	return [...]string{"string", "integer", "number", "boolean", "object", "array of strings", "id"}[k]
}

type field struct {
	name string
	kind kind
	sub  []field // fields of an object
}

// payloadFields are the data fields spec 6.2 defines, per event. Fields
// are optional; present ones must have the stated type. Other fields pass
// through unchanged.
var payloadFields = map[string][]field{
	"call_started": {
		{name: "call_id", kind: kID}, {name: "phone_number"}, {name: "caller_id"}, {name: "agent_id", kind: kID},
		{name: "direction"}, {name: "call_source"},
		{name: "metadata", kind: kObject, sub: []field{{name: "caller_location"}, {name: "call_queue"}}},
	},
	"call_ended": {
		{name: "call_id", kind: kID}, {name: "duration_seconds", kind: kInteger}, {name: "end_reason"},
		{name: "resolution_status"}, {name: "conversation_summary"}, {name: "satisfaction_score", kind: kNumber},
		{name: "transcript_available", kind: kBoolean}, {name: "recording_available", kind: kBoolean},
	},
	"conversation_ended": {
		{name: "conversation_id", kind: kID}, {name: "call_id", kind: kID}, {name: "agent_id", kind: kID}, {name: "turn_count", kind: kInteger},
		{name: "topics_discussed", kind: kStringArray},
		{name: "sentiment_analysis", kind: kObject, sub: []field{{name: "overall_sentiment"}, {name: "sentiment_score", kind: kNumber}}},
		{name: "knowledge_base_queries", kind: kInteger}, {name: "escalation_occurred", kind: kBoolean},
	},
	"escalation_triggered": {
		{name: "call_id", kind: kID}, {name: "conversation_id", kind: kID}, {name: "escalation_reason"}, {name: "escalation_trigger"},
		{name: "agent_id", kind: kID}, {name: "target_queue"}, {name: "context_summary"}, {name: "conversation_history"},
	},
}

// idFields are checked in the data of every event spec 6.2 does not
// describe.
var idFields = []field{{name: "conversation_id", kind: kID}, {name: "agent_id", kind: kID}, {name: "call_id", kind: kID}}

// Envelope is the spec 6.1 delivery body: {event, timestamp, data}.
type Envelope struct {
	Event     string          `json:"event"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// TimestampLayout is the ISO 8601 UTC form of envelope timestamps.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTimestamp renders t as an envelope timestamp.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// IngestInput is the body of POST /v1/convai/events.
type IngestInput struct {
	Event     *string         `json:"event"`
	Timestamp *string         `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// ParseIngest validates an ingestion body (already JSON-decoded into in)
// and returns the envelope to publish, with the timestamp normalised to
// UTC (now when absent) and data compacted.
func ParseIngest(in IngestInput, now time.Time) (Envelope, error) {
	var v apperr.Validator
	env := Envelope{}
	if in.Event == nil {
		v.Add("Field required", "missing", "body", "event")
	} else if !IsPlatformEvent(*in.Event) {
		v.Add(fmt.Sprintf("Unknown event name %q; expected one of: %s", *in.Event, strings.Join(PlatformEvents, ", ")), "enum", "body", "event")
	} else {
		env.Event = *in.Event
	}
	env.Timestamp = FormatTimestamp(now)
	if in.Timestamp != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.Timestamp)
		if err != nil {
			v.Add("Input should be an ISO 8601 date-time with a time zone, e.g. 2026-01-02T15:04:05Z", "datetime_parsing", "body", "timestamp")
		} else {
			env.Timestamp = FormatTimestamp(t)
		}
	}
	raw := bytes.TrimSpace(in.Data)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		v.Add("Field required", "missing", "body", "data")
	case raw[0] != '{':
		v.Add("Input should be a valid object", "type_error", "body", "data")
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			v.Add("Input should be a valid object", "type_error", "body", "data")
			break
		}
		env.Data = buf.Bytes()
		if env.Event != "" {
			checkPayload(&v, env.Event, env.Data)
		}
	}
	return env, v.Err()
}

// CheckPayload validates data against the spec 6.2 fields of event.
func CheckPayload(event string, data []byte) error {
	var v apperr.Validator
	checkPayload(&v, event, data)
	return v.Err()
}

func checkPayload(v *apperr.Validator, event string, data []byte) {
	fields, ok := payloadFields[event]
	if !ok {
		fields = idFields // no spec 6.2 fields: the ids other services key on still are ids
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		v.Add("Input should be a valid object", "type_error", "body", "data")
		return
	}
	checkFields(v, fields, obj, []any{"body", "data"})
}

func checkFields(v *apperr.Validator, fields []field, obj map[string]json.RawMessage, loc []any) {
	for _, f := range fields {
		raw, ok := obj[f.name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			continue
		}
		at := append(append([]any{}, loc...), f.name)
		if !hasKind(raw, f.kind) {
			if f.kind == kID {
				v.Add(apperr.IDMessage, "string_pattern_mismatch", at...)
			} else {
				v.Add("Input should be a valid "+f.kind.String(), "type_error", at...)
			}
			continue
		}
		if f.kind == kObject && len(f.sub) > 0 {
			var sub map[string]json.RawMessage
			_ = json.Unmarshal(raw, &sub)
			checkFields(v, f.sub, sub, at)
		}
	}
}

func hasKind(raw json.RawMessage, k kind) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var val any
	if dec.Decode(&val) != nil {
		return false
	}
	switch k {
	case kString:
		_, ok := val.(string)
		return ok
	case kID:
		s, ok := val.(string)
		return ok && ids.Valid(s)
	case kInteger:
		n, ok := val.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		return err == nil
	case kNumber:
		_, ok := val.(json.Number)
		return ok
	case kBoolean:
		_, ok := val.(bool)
		return ok
	case kObject:
		_, ok := val.(map[string]any)
		return ok
	case kStringArray:
		arr, ok := val.([]any)
		if !ok {
			return false
		}
		for _, e := range arr {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// SampleData is the data of a test delivery of event: every spec 6.2
// field with a plausible value, or a small marker object for events whose
// payload the spec does not show.
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
	case "test_invocation_completed", "test_invocation_cancelled":
		return json.RawMessage(`{"invocation_id":"inv_test","agent_id":"agent_test","agent_name":"Support","branch_id":"","folder_id":"","title":"Nightly","status":"completed","repeat_count":1,"test_run_count":3,"passed_count":2,"failed_count":1,"ran_by_user_email":"ci@example.com","created_at_unix_secs":1767322000,"completed_at_unix_secs":1767322060,"cancelled_at_unix_secs":null,"test":true}`)
	default:
		return json.RawMessage(`{"test":true}`)
	}
}
