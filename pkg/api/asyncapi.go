package api

import (
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	events "github.com/voiceai-platform/voiceai/proto-events"
)

// AsyncAPIPath is where the gateway serves the AsyncAPI document.
const AsyncAPIPath = "/v1/asyncapi.json"

// AsyncAPI is the AsyncAPI 3.0 document of the event streams subscribers
// may tap: one channel per stream (its subjects), one message per event
// type, each with the headers every event carries. Events are stored as
// binary protobuf; each payload schema is the JSON Schema of the event's
// canonical protobuf JSON with proto field names (what `voiceai events
// tail --json` prints), made from the registry's message descriptors, so
// it cannot drift from the .proto files. PLATFORM carries the spec 6
// JSON envelopes.
func AsyncAPI() ([]byte, error) { return asyncAPIJSON() }

var asyncAPIJSON = indentedOnce(asyncDocument)

func asyncDocument() (map[string]any, error) {
	envelope, err := Schema("EventEnvelope")
	if err != nil {
		return nil, err
	}
	schemas := map[string]any{"EventEnvelope": envelope}
	messages := map[string]any{}
	byStream := map[string][]string{}
	for _, t := range events.Types() {
		stream, _ := events.StreamOf(t)
		byStream[stream] = append(byStream[stream], t)
	}
	headers := map[string]any{"type": "object", "properties": map[string]any{
		events.HeaderEventType:     map[string]any{"type": "string", "description": "The event type, e.g. tickets.ticket_created: which message the payload is."},
		events.HeaderEventID:       map[string]any{"type": "string", "description": "The event's id, stable across redeliveries."},
		events.HeaderWorkspaceID:   map[string]any{"type": "string"},
		events.HeaderSchema:        map[string]any{"type": "string", "description": "The full protobuf name of the payload."},
		events.HeaderSchemaVersion: map[string]any{"type": "string"},
		events.HeaderMsgID:         map[string]any{"type": "string", "description": "JetStream's de-duplication id."},
		events.HeaderTraceparent:   map[string]any{"type": "string", "description": "W3C trace context of the command that stored the event."},
	}}
	channels, operations := map[string]any{}, map[string]any{}
	for _, s := range events.Streams() {
		refs := map[string]any{}
		if s.Name == events.PlatformStream {
			messages["PlatformEvent"] = map[string]any{
				"name": "PlatformEvent", "contentType": "application/json",
				"summary": "A spec 6.1 event on platform.evt.<workspace_id>.<event>, the JSON envelope as ingested or published.",
				"payload": map[string]any{"$ref": "#/components/schemas/EventEnvelope"},
			}
			refs["PlatformEvent"] = map[string]any{"$ref": "#/components/messages/PlatformEvent"}
		}
		if s.Name == events.TestRunsStream {
			// Two kinds of record on TESTRUNS are not events: no
			// Voiceai-Event-Type header, a decimal text for payload.
			for name, summary := range map[string]string{
				"TestRunsQueued": "Not an event: on testruns.queued.<workspace_id>.<invocation_id>, how many run jobs the invocation " +
					"has queued in all, as decimal text (the last is current). It has no Voiceai-Event-Type header.",
				"TestRunsCompleting": "Not an event: on testruns.completing.<workspace_id>.<invocation_id>, a runner's claim to " +
					"complete the invocation's round whose jobs total it holds, as decimal text. It has no Voiceai-Event-Type header.",
			} {
				messages[name] = map[string]any{"name": name, "contentType": "text/plain", "summary": summary,
					"payload": map[string]any{"type": "string", "pattern": "^[0-9]+$"}}
				refs[name] = map[string]any{"$ref": "#/components/messages/" + name}
			}
		}
		for _, t := range byStream[s.Name] {
			msg, _ := events.New(t)
			desc := msg.ProtoReflect().Descriptor()
			protoSchema(desc, schemas)
			name := string(desc.FullName())
			messages[t] = map[string]any{
				"name": t, "title": string(desc.Name()), "contentType": "application/x-protobuf",
				"summary": "Protobuf message " + name + "; the schema is its protobuf JSON form.",
				"headers": headers, "payload": map[string]any{"$ref": "#/components/schemas/" + name},
			}
			refs[t] = map[string]any{"$ref": "#/components/messages/" + t}
		}
		if len(refs) == 0 {
			continue
		}
		channels[s.Name] = map[string]any{
			"address":     strings.Join(s.Subjects, " "),
			"description": s.Description + ". JetStream stream " + s.Name + ", subjects " + strings.Join(s.Subjects, ", ") + ".",
			"messages":    refs,
		}
		var ops []any
		for name := range refs {
			ops = append(ops, map[string]any{"$ref": "#/channels/" + s.Name + "/messages/" + name})
		}
		sort.Slice(ops, func(i, j int) bool {
			return ops[i].(map[string]any)["$ref"].(string) < ops[j].(map[string]any)["$ref"].(string)
		})
		operations["receive"+s.Name] = map[string]any{
			"action":   "receive",
			"channel":  map[string]any{"$ref": "#/channels/" + s.Name},
			"summary":  "Consume " + s.Name + " (a durable or ordered JetStream consumer).",
			"messages": ops,
		}
	}
	return map[string]any{
		"asyncapi": "3.0.0",
		"info": map[string]any{
			"title":   "Voice agent QA platform events",
			"version": Version,
			"description": "The NATS JetStream streams the services write their events to. A subscriber reads them with its own " +
				"consumer; the Voiceai-Event-Type header names the payload's message.",
		},
		"servers":    map[string]any{"nats": map[string]any{"host": "127.0.0.1:4222", "protocol": "nats", "description": "The embedded NATS of make run; VOICEAI_NATS_URL elsewhere."}},
		"channels":   channels,
		"operations": operations,
		"components": map[string]any{"messages": messages, "schemas": schemas},
	}, nil
}

// protoSchema adds the JSON Schema of desc's protobuf JSON form (and of
// every message it holds) to schemas, under full names.
func protoSchema(desc protoreflect.MessageDescriptor, schemas map[string]any) {
	name := string(desc.FullName())
	if _, done := schemas[name]; done {
		return
	}
	if s, ok := wellKnown(name); ok {
		schemas[name] = s
		return
	}
	props := map[string]any{}
	schemas[name] = map[string]any{"type": "object", "title": string(desc.Name()), "properties": props}
	fields := desc.Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		var s map[string]any
		switch {
		case f.IsMap():
			s = map[string]any{"type": "object", "additionalProperties": fieldSchema(f.MapValue(), schemas)}
		case f.IsList():
			s = map[string]any{"type": "array", "items": fieldSchema(f, schemas)}
		default:
			s = fieldSchema(f, schemas)
		}
		props[string(f.Name())] = s
	}
}

// fieldSchema is the schema of one value of f (one element when f is
// repeated).
func fieldSchema(f protoreflect.FieldDescriptor, schemas map[string]any) map[string]any {
	switch f.Kind() {
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}
	case protoreflect.StringKind:
		return map[string]any{"type": "string"}
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return map[string]any{"type": "integer"}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": "string", "pattern": "^-?[0-9]+$", "description": "A 64-bit integer, as protobuf JSON writes it."}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return map[string]any{"type": "number"}
	case protoreflect.EnumKind:
		var names []any
		vals := f.Enum().Values()
		for i := 0; i < vals.Len(); i++ {
			names = append(names, string(vals.Get(i).Name()))
		}
		return map[string]any{"type": "string", "enum": names}
	default: // message or group
		protoSchema(f.Message(), schemas)
		return map[string]any{"$ref": "#/components/schemas/" + string(f.Message().FullName())}
	}
}

// wellKnown maps the protobuf well-known types to their JSON forms.
func wellKnown(name string) (map[string]any, bool) {
	switch name {
	case "google.protobuf.Timestamp":
		return map[string]any{"type": "string", "format": "date-time"}, true
	case "google.protobuf.Duration":
		return map[string]any{"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?s$"}, true
	case "google.protobuf.Struct":
		return map[string]any{"type": "object"}, true
	case "google.protobuf.Value":
		return map[string]any{}, true
	}
	return nil, false
}
