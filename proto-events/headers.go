package events

// Header names carried by every event message on the bus.
const (
	// HeaderMsgID is JetStream's deduplication header. Publishers set it
	// (jetstream.WithMsgID) to the command id, so a retried command's
	// duplicate append is dropped within the stream's duplicate window.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderEventID is the event's unique id (EventMeta.event_id).
	HeaderEventID = "Voiceai-Event-Id"
	// HeaderEventType is the event type, e.g. "agents.agent_created"; the
	// key to New and Decode.
	HeaderEventType = "Voiceai-Event-Type"
	// HeaderSchema is the full protobuf name of the payload message, e.g.
	// "voiceai.agents.v1.AgentCreated" (see SchemaOf).
	HeaderSchema = "Voiceai-Schema"
	// HeaderSchemaVersion is the contract version of the payload; see
	// SchemaVersion.
	HeaderSchemaVersion = "Voiceai-Schema-Version"
	// HeaderWorkspaceID is the workspace the event belongs to
	// (EventMeta.workspace_id).
	HeaderWorkspaceID = "Voiceai-Workspace-Id"
	// HeaderTraceparent is the W3C Trace Context header of the command that
	// produced the event, when there is one.
	HeaderTraceparent = "traceparent"
	// HeaderAttemptsMade and HeaderDeferrals ride on a webhook delivery
	// job put back in the queue to wait for its workspace's turn: the
	// attempts made of it before, and the times it waited so.
	HeaderAttemptsMade = "Voiceai-Attempts-Made"
	HeaderDeferrals    = "Voiceai-Deferrals"
	// HeaderCommandID and HeaderRequestDigest ride on a record written
	// outside the protobuf events whose Nats-Msg-Id is not its command's
	// (a conversation's deletion, deduplicated per conversation): the
	// command id of the keyed request that made it, and that request's
	// fingerprint (EventMeta's command_id and request_digest).
	HeaderCommandID     = "Voiceai-Command-Id"
	HeaderRequestDigest = "Voiceai-Request-Digest"
)

// SchemaVersion is the value of HeaderSchemaVersion for every message of
// the v1 packages. Evolution within v1 is additive, so it stays "1"; a
// breaking change would be a new package (v2) and a new version.
const SchemaVersion = "1"
