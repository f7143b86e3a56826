package events

import (
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
)

// Event types: the value of HeaderEventType, "<context>.<snake_case_name>".
// A type names exactly one message, and never changes meaning.
const (
	TypeAgentCreated = "agents.agent_created"
	TypeAgentUpdated = "agents.agent_updated"
	TypeAgentDeleted = "agents.agent_deleted"

	TypeSecretCreated = "agents.secret_created"
	TypeSecretUpdated = "agents.secret_updated"
	TypeSecretDeleted = "agents.secret_deleted"

	TypeWorkspaceCreated      = "identity.workspace_created"
	TypeServiceAccountCreated = "identity.service_account_created"
	TypeUserAdded             = "identity.user_added"
	TypeUserUpdated           = "identity.user_updated"
	TypeAPIKeyCreated         = "identity.api_key_created"
	TypeAPIKeyUpdated         = "identity.api_key_updated"
	TypeAPIKeyRevoked         = "identity.api_key_revoked"

	TypeTicketCreated       = "tickets.ticket_created"
	TypeTicketUpdated       = "tickets.ticket_updated"
	TypeTicketStatusChanged = "tickets.ticket_status_changed"
	TypeTicketCommented     = "tickets.ticket_commented"
	TypeTicketMerged        = "tickets.ticket_merged"
	TypeTicketDeleted       = "tickets.ticket_deleted"
	TypeTestFailureRecorded = "tickets.test_failure_recorded"
	TypeTicketClustered     = "tickets.ticket_clustered"

	TypeConversationTagCreated    = "tickets.conversation_tag_created"
	TypeConversationTagUpdated    = "tickets.conversation_tag_updated"
	TypeConversationTagDeleted    = "tickets.conversation_tag_deleted"
	TypeConversationFeedbackGiven = "tickets.conversation_feedback_given"
	TypeConversationTagsChanged   = "tickets.conversation_tags_changed"
)

// Event is implemented by every registered event message: field 1 of each
// is its EventMeta.
type Event interface {
	proto.Message
	GetMeta() *commonv1.EventMeta
}

type registration struct {
	eventType string
	stream    string
	empty     func() Event
}

// registrations is the one table of the registry; everything else is
// derived from it at init.
var registrations = []registration{
	{TypeAgentCreated, AgentsStream, func() Event { return &agentsv1.AgentCreated{} }},
	{TypeAgentUpdated, AgentsStream, func() Event { return &agentsv1.AgentUpdated{} }},
	{TypeAgentDeleted, AgentsStream, func() Event { return &agentsv1.AgentDeleted{} }},
	{TypeSecretCreated, AgentsStream, func() Event { return &agentsv1.SecretCreated{} }},
	{TypeSecretUpdated, AgentsStream, func() Event { return &agentsv1.SecretUpdated{} }},
	{TypeSecretDeleted, AgentsStream, func() Event { return &agentsv1.SecretDeleted{} }},

	{TypeWorkspaceCreated, IdentityStream, func() Event { return &identityv1.WorkspaceCreated{} }},
	{TypeServiceAccountCreated, IdentityStream, func() Event { return &identityv1.ServiceAccountCreated{} }},
	{TypeUserAdded, IdentityStream, func() Event { return &identityv1.UserAdded{} }},
	{TypeUserUpdated, IdentityStream, func() Event { return &identityv1.UserUpdated{} }},
	{TypeAPIKeyCreated, IdentityStream, func() Event { return &identityv1.ApiKeyCreated{} }},
	{TypeAPIKeyUpdated, IdentityStream, func() Event { return &identityv1.ApiKeyUpdated{} }},
	{TypeAPIKeyRevoked, IdentityStream, func() Event { return &identityv1.ApiKeyRevoked{} }},

	{TypeTicketCreated, TicketsStream, func() Event { return &ticketsv1.TicketCreated{} }},
	{TypeTicketUpdated, TicketsStream, func() Event { return &ticketsv1.TicketUpdated{} }},
	{TypeTicketStatusChanged, TicketsStream, func() Event { return &ticketsv1.TicketStatusChanged{} }},
	{TypeTicketCommented, TicketsStream, func() Event { return &ticketsv1.TicketCommented{} }},
	{TypeTicketMerged, TicketsStream, func() Event { return &ticketsv1.TicketMerged{} }},
	{TypeTicketDeleted, TicketsStream, func() Event { return &ticketsv1.TicketDeleted{} }},
	{TypeTestFailureRecorded, TicketsStream, func() Event { return &ticketsv1.TestFailureRecorded{} }},
	{TypeTicketClustered, TicketsStream, func() Event { return &ticketsv1.TicketClustered{} }},
	{TypeConversationTagCreated, TicketsStream, func() Event { return &ticketsv1.ConversationTagCreated{} }},
	{TypeConversationTagUpdated, TicketsStream, func() Event { return &ticketsv1.ConversationTagUpdated{} }},
	{TypeConversationTagDeleted, TicketsStream, func() Event { return &ticketsv1.ConversationTagDeleted{} }},
	{TypeConversationFeedbackGiven, TicketsStream, func() Event { return &ticketsv1.ConversationFeedbackGiven{} }},
	{TypeConversationTagsChanged, TicketsStream, func() Event { return &ticketsv1.ConversationTagsChanged{} }},

	{TypeTestCreated, TestingStream, func() Event { return &testingv1.TestCreated{} }},
	{TypeTestUpdated, TestingStream, func() Event { return &testingv1.TestUpdated{} }},
	{TypeTestDeleted, TestingStream, func() Event { return &testingv1.TestDeleted{} }},
	{TypeFolderCreated, TestingStream, func() Event { return &testingv1.FolderCreated{} }},
	{TypeFolderUpdated, TestingStream, func() Event { return &testingv1.FolderUpdated{} }},
	{TypeFolderDeleted, TestingStream, func() Event { return &testingv1.FolderDeleted{} }},
	{TypeFoldersMoved, TestingStream, func() Event { return &testingv1.FoldersMoved{} }},
	{TypeInvocationCreated, TestingStream, func() Event { return &testingv1.InvocationCreated{} }},
	{TypeInvocationResubmitted, TestingStream, func() Event { return &testingv1.InvocationResubmitted{} }},
	{TypeInvocationCancelled, TestingStream, func() Event { return &testingv1.InvocationCancelled{} }},
	{TypeInvocationCompleted, TestingStream, func() Event { return &testingv1.InvocationCompleted{} }},
	{TypeBucketingCompleted, TestingStream, func() Event { return &testingv1.BucketingCompleted{} }},
	{TypeBucketingFailed, TestingStream, func() Event { return &testingv1.BucketingFailed{} }},
	{TypeRunCompleted, TestRunsStream, func() Event { return &testingv1.RunCompleted{} }},
	{TypeResultGroupComputed, TestRunsStream, func() Event { return &testingv1.ResultGroupComputed{} }},
	{TypeRunLabelled, TestRunsStream, func() Event { return &testingv1.RunLabelled{} }},
	{TypeConversationAnalysed, TestRunsStream, func() Event { return &testingv1.ConversationAnalysed{} }},
	{TypeConversationLabelled, TestRunsStream, func() Event { return &testingv1.ConversationLabelled{} }},
	{TypeRunRejudged, TestRunsStream, func() Event { return &testingv1.RunRejudged{} }},
	{TypeLoadStepCompleted, TestingStream, func() Event { return &testingv1.LoadStepCompleted{} }},
	{TypeLoadSamplesRecorded, TestRunsStream, func() Event { return &testingv1.LoadSamplesRecorded{} }},

	{TypeWebhookCreated, WebhooksStream, func() Event { return &webhooksv1.WebhookCreated{} }},
	{TypeWebhookUpdated, WebhooksStream, func() Event { return &webhooksv1.WebhookUpdated{} }},
	{TypeWebhookDeleted, WebhooksStream, func() Event { return &webhooksv1.WebhookDeleted{} }},
	{TypeWebhookDisabled, WebhooksStream, func() Event { return &webhooksv1.WebhookDisabled{} }},
}

var (
	byType   = map[string]registration{}
	bySchema = map[protoreflect.FullName]string{}
	descOf   = map[string]protoreflect.MessageDescriptor{} // by event type
)

func init() {
	for _, r := range registrations {
		desc := r.empty().ProtoReflect().Descriptor()
		name := desc.FullName()
		if _, dup := byType[r.eventType]; dup {
			panic("events: duplicate event type " + r.eventType)
		}
		if _, dup := bySchema[name]; dup {
			panic("events: message " + string(name) + " registered twice")
		}
		byType[r.eventType] = r
		bySchema[name] = r.eventType
		descOf[r.eventType] = desc
	}
}

// New returns a new, empty message for eventType, ready for proto.Unmarshal;
// ok is false for a type this build does not know (a consumer should skip
// or park such a message, not fail: newer producers may add types).
func New(eventType string) (msg proto.Message, ok bool) {
	r, ok := byType[eventType]
	if !ok {
		return nil, false
	}
	return r.empty(), true
}

// TypeOf returns the event type of msg, or "" when msg is not a registered
// event message.
func TypeOf(msg proto.Message) string {
	if msg == nil {
		return ""
	}
	return bySchema[msg.ProtoReflect().Descriptor().FullName()]
}

// SchemaOf returns the full protobuf name of msg, e.g.
// "voiceai.agents.v1.AgentCreated": the value of HeaderSchema. It returns ""
// for a nil message. The schema version is SchemaVersion.
func SchemaOf(msg proto.Message) string {
	if msg == nil {
		return ""
	}
	return string(msg.ProtoReflect().Descriptor().FullName())
}

// StreamOf returns the stream that carries events of eventType.
func StreamOf(eventType string) (stream string, ok bool) {
	r, ok := byType[eventType]
	return r.stream, ok
}

// Types returns every registered event type, sorted.
func Types() []string {
	out := make([]string, 0, len(byType))
	for t := range byType {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// ErrUnknownType is wrapped by Decode's error for an unregistered type.
var ErrUnknownType = errors.New("unknown event type")

// Decode unmarshals data as the message of eventType (the value of the
// HeaderEventType header). Unknown fields from newer producers are kept.
func Decode(eventType string, data []byte) (Event, error) {
	r, ok := byType[eventType]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownType, eventType)
	}
	msg := r.empty()
	if err := proto.Unmarshal(data, msg); err != nil {
		return nil, fmt.Errorf("decode %s: %w", eventType, err)
	}
	return msg, nil
}

// MetaOf returns the EventMeta of a registered event message, or nil for
// any other message.
func MetaOf(msg proto.Message) *commonv1.EventMeta {
	if ev, ok := msg.(Event); ok {
		return ev.GetMeta()
	}
	return nil
}
