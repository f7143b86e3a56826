// Package events is the single source of truth for the event bus: the
// JetStream stream names, the subject layout and its builders, the message
// header names, the event type names, and the registry that maps an event
// type to its protobuf message (generated under gen/ from proto/).
//
// Publishing an event:
//
//	subject, err := events.AgentSubject(ws, agentID) // rejects unsafe ids
//	data, _ := proto.Marshal(ev)
//	// headers: Nats-Msg-Id = command id, Voiceai-Event-Type = events.TypeOf(ev),
//	// Voiceai-Schema = events.SchemaOf(ev), Voiceai-Schema-Version = events.SchemaVersion, ...
//
// Consuming one:
//
//	msg, err := events.Decode(m.Headers().Get(events.HeaderEventType), m.Data())
//	switch ev := msg.(type) {
//	case *agentsv1.AgentCreated: ...
//	}
//
// Ids used as subject tokens are validated, not rewritten: a builder returns
// an error wrapping ErrInvalidToken for an empty id or one containing '.',
// '*', '>', whitespace or a control character. Silently sanitising would map
// two different ids to one subject, so the caller must reject the input
// instead (ids minted by the platform never contain those characters).
//
// See README.md beside this file for the subscriber's manual.
package events
