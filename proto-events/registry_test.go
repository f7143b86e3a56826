package events_test

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"
)

// wantTypes is the published contract: type name -> message and stream.
// Changing an existing line here is a breaking change for subscribers.
var wantTypes = map[string]struct {
	schema string
	stream string
}{
	"agents.agent_created":             {"voiceai.agents.v1.AgentCreated", "AGENTS"},
	"agents.agent_updated":             {"voiceai.agents.v1.AgentUpdated", "AGENTS"},
	"agents.agent_deleted":             {"voiceai.agents.v1.AgentDeleted", "AGENTS"},
	"agents.secret_created":            {"voiceai.agents.v1.SecretCreated", "AGENTS"},
	"agents.secret_updated":            {"voiceai.agents.v1.SecretUpdated", "AGENTS"},
	"agents.secret_deleted":            {"voiceai.agents.v1.SecretDeleted", "AGENTS"},
	"identity.workspace_created":       {"voiceai.identity.v1.WorkspaceCreated", "IDENTITY"},
	"identity.service_account_created": {"voiceai.identity.v1.ServiceAccountCreated", "IDENTITY"},
	"identity.api_key_created":         {"voiceai.identity.v1.ApiKeyCreated", "IDENTITY"},
	"identity.user_added":              {"voiceai.identity.v1.UserAdded", "IDENTITY"},
	"identity.user_updated":            {"voiceai.identity.v1.UserUpdated", "IDENTITY"},
	"identity.api_key_updated":         {"voiceai.identity.v1.ApiKeyUpdated", "IDENTITY"},
	"identity.api_key_revoked":         {"voiceai.identity.v1.ApiKeyRevoked", "IDENTITY"},
	"tickets.ticket_created":           {"voiceai.tickets.v1.TicketCreated", "TICKETS"},
	"tickets.ticket_updated":           {"voiceai.tickets.v1.TicketUpdated", "TICKETS"},
	"tickets.ticket_status_changed":    {"voiceai.tickets.v1.TicketStatusChanged", "TICKETS"},
	"tickets.ticket_commented":         {"voiceai.tickets.v1.TicketCommented", "TICKETS"},
	"tickets.ticket_merged":            {"voiceai.tickets.v1.TicketMerged", "TICKETS"},
	"tickets.ticket_deleted":           {"voiceai.tickets.v1.TicketDeleted", "TICKETS"},
	"tickets.test_failure_recorded":    {"voiceai.tickets.v1.TestFailureRecorded", "TICKETS"},
	"tickets.ticket_clustered":         {"voiceai.tickets.v1.TicketClustered", "TICKETS"},
	"testing.test_created":             {"voiceai.testing.v1.TestCreated", "TESTING"},
	"testing.test_updated":             {"voiceai.testing.v1.TestUpdated", "TESTING"},
	"testing.test_deleted":             {"voiceai.testing.v1.TestDeleted", "TESTING"},
	"testing.folder_created":           {"voiceai.testing.v1.FolderCreated", "TESTING"},
	"testing.folder_updated":           {"voiceai.testing.v1.FolderUpdated", "TESTING"},
	"testing.folder_deleted":           {"voiceai.testing.v1.FolderDeleted", "TESTING"},
	"testing.folders_moved":            {"voiceai.testing.v1.FoldersMoved", "TESTING"},
	"testing.invocation_created":       {"voiceai.testing.v1.InvocationCreated", "TESTING"},
	"testing.invocation_resubmitted":   {"voiceai.testing.v1.InvocationResubmitted", "TESTING"},
	"testing.invocation_cancelled":     {"voiceai.testing.v1.InvocationCancelled", "TESTING"},
	"testing.invocation_completed":     {"voiceai.testing.v1.InvocationCompleted", "TESTING"},
	"testing.bucketing_completed":      {"voiceai.testing.v1.BucketingCompleted", "TESTING"},
	"testing.bucketing_failed":         {"voiceai.testing.v1.BucketingFailed", "TESTING"},
	"testing.run_completed":            {"voiceai.testing.v1.RunCompleted", "TESTRUNS"},
	"testing.result_group_computed":    {"voiceai.testing.v1.ResultGroupComputed", "TESTRUNS"},
	"testing.run_labelled":             {"voiceai.testing.v1.RunLabelled", "TESTRUNS"},
	"testing.conversation_analysed":    {"voiceai.testing.v1.ConversationAnalysed", "TESTRUNS"},
	"testing.conversation_labelled":    {"voiceai.testing.v1.ConversationLabelled", "TESTRUNS"},
	"testing.run_rejudged":             {"voiceai.testing.v1.RunRejudged", "TESTRUNS"},
	"testing.load_step_completed":      {"voiceai.testing.v1.LoadStepCompleted", "TESTING"},
	"testing.load_samples_recorded":    {"voiceai.testing.v1.LoadSamplesRecorded", "TESTRUNS"},
	"webhooks.webhook_created":         {"voiceai.webhooks.v1.WebhookCreated", "WEBHOOKS"},
	"webhooks.webhook_updated":         {"voiceai.webhooks.v1.WebhookUpdated", "WEBHOOKS"},
	"webhooks.webhook_deleted":         {"voiceai.webhooks.v1.WebhookDeleted", "WEBHOOKS"},
	"webhooks.webhook_disabled":        {"voiceai.webhooks.v1.WebhookDisabled", "WEBHOOKS"},

	// Conversation tags and the feedback and tags on a conversation.
	"tickets.conversation_tag_created":    {"voiceai.tickets.v1.ConversationTagCreated", "TICKETS"},
	"tickets.conversation_tag_updated":    {"voiceai.tickets.v1.ConversationTagUpdated", "TICKETS"},
	"tickets.conversation_tag_deleted":    {"voiceai.tickets.v1.ConversationTagDeleted", "TICKETS"},
	"tickets.conversation_feedback_given": {"voiceai.tickets.v1.ConversationFeedbackGiven", "TICKETS"},
	"tickets.conversation_tags_changed":   {"voiceai.tickets.v1.ConversationTagsChanged", "TICKETS"},
}

func TestTypesAreExactlyTheContract(t *testing.T) {
	var want []string
	for typ := range wantTypes {
		want = append(want, typ)
	}
	sort.Strings(want)
	if got := events.Types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Types() = %v\nwant %v", got, want)
	}
	consts := []string{
		events.TypeAgentCreated, events.TypeAgentUpdated, events.TypeAgentDeleted,
		events.TypeSecretCreated, events.TypeSecretUpdated, events.TypeSecretDeleted,
		events.TypeWorkspaceCreated, events.TypeServiceAccountCreated, events.TypeUserAdded, events.TypeUserUpdated,
		events.TypeAPIKeyCreated, events.TypeAPIKeyUpdated, events.TypeAPIKeyRevoked,
		events.TypeTicketCreated, events.TypeTicketUpdated, events.TypeTicketStatusChanged,
		events.TypeTicketCommented, events.TypeTicketMerged, events.TypeTicketDeleted,
		events.TypeTestFailureRecorded, events.TypeTicketClustered,
		events.TypeConversationTagCreated, events.TypeConversationTagUpdated, events.TypeConversationTagDeleted,
		events.TypeConversationFeedbackGiven, events.TypeConversationTagsChanged,
		events.TypeTestCreated, events.TypeTestUpdated, events.TypeTestDeleted,
		events.TypeFolderCreated, events.TypeFolderUpdated, events.TypeFolderDeleted, events.TypeFoldersMoved,
		events.TypeInvocationCreated, events.TypeInvocationResubmitted, events.TypeInvocationCancelled,
		events.TypeInvocationCompleted, events.TypeBucketingCompleted, events.TypeBucketingFailed,
		events.TypeRunCompleted, events.TypeResultGroupComputed, events.TypeRunLabelled,
		events.TypeConversationAnalysed, events.TypeConversationLabelled, events.TypeRunRejudged,
		events.TypeLoadStepCompleted, events.TypeLoadSamplesRecorded,
		events.TypeWebhookCreated, events.TypeWebhookUpdated, events.TypeWebhookDeleted, events.TypeWebhookDisabled,
	}
	for _, c := range consts {
		if _, ok := wantTypes[c]; !ok {
			t.Errorf("constant %q is not in the contract", c)
		}
	}
	if len(consts) != len(wantTypes) {
		t.Errorf("%d type constants for %d contract types", len(consts), len(wantTypes))
	}
}

// populated fills every field of msg (recursively) with a non-zero value,
// so a round trip exercises the whole schema.
func populated(t *testing.T, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsMap(): // a webhook's request headers
			mp := m.Mutable(fd).Map()
			key := scalar(t, fd.MapKey(), "key").MapKey()
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v := mp.NewValue()
				populated(t, v.Message())
				mp.Set(key, v)
			} else {
				mp.Set(key, scalar(t, fd.MapValue(), "value"))
			}
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := m.Mutable(fd).List()
			for range 2 {
				e := l.NewElement()
				populated(t, e.Message())
				l.Append(e)
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Append(scalar(t, fd, "a"))
			l.Append(scalar(t, fd, "b"))
		case fd.Kind() == protoreflect.MessageKind:
			populated(t, m.Mutable(fd).Message())
		default:
			m.Set(fd, scalar(t, fd, string(fd.Name())))
		}
	}
}

func scalar(t *testing.T, fd protoreflect.FieldDescriptor, s string) protoreflect.Value {
	t.Helper()
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(s)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(s))
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(int64(len(s)) + 1_700_000_000)
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(int32(len(s)))
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64(uint64(len(s)) + 1)
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	default:
		t.Fatalf("field %s: kind %s not covered by the test; extend scalar()", fd.FullName(), fd.Kind())
		return protoreflect.Value{}
	}
}

func TestEveryTypeRoundTrips(t *testing.T) {
	for typ, want := range wantTypes {
		t.Run(typ, func(t *testing.T) {
			msg, ok := events.New(typ)
			if !ok || msg == nil {
				t.Fatalf("New(%q) = %v, %v", typ, msg, ok)
			}
			if !proto.Equal(msg, msg.ProtoReflect().Type().New().Interface()) {
				t.Fatalf("New(%q) is not empty: %v", typ, msg)
			}
			if again, _ := events.New(typ); again == msg {
				t.Fatalf("New(%q) returned the same instance twice", typ)
			}
			if got := events.TypeOf(msg); got != typ {
				t.Errorf("TypeOf(New(%q)) = %q", typ, got)
			}
			if got := events.SchemaOf(msg); got != want.schema {
				t.Errorf("SchemaOf = %q, want %q", got, want.schema)
			}
			if got, ok := events.StreamOf(typ); !ok || got != want.stream {
				t.Errorf("StreamOf = %q, %v, want %q", got, ok, want.stream)
			}

			populated(t, msg.ProtoReflect())
			data, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := events.Decode(typ, data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !proto.Equal(decoded, msg) {
				t.Fatalf("round trip changed the message:\n got %v\nwant %v", decoded, msg)
			}
			if meta := events.MetaOf(decoded); meta.GetEventId() != "event_id" || meta.GetWorkspaceId() != "workspace_id" {
				t.Errorf("MetaOf(decoded) = %v", meta)
			}
		})
	}
}

// TestEveryEventMessageIsRegistered walks every message generated from
// proto/voiceai: each one whose field 1 is an EventMeta is an event and must
// have a type; every other message must not.
func TestEveryEventMessageIsRegistered(t *testing.T) {
	metaName := (&commonv1.EventMeta{}).ProtoReflect().Descriptor().FullName()
	// Make sure every generated package is linked in.
	_ = []proto.Message{&agentsv1.Agent{}, &identityv1.ApiKey{}}
	seen := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		d := mt.Descriptor()
		if !strings.HasPrefix(string(d.FullName()), "voiceai.") {
			return true
		}
		seen++
		f1 := d.Fields().ByNumber(1)
		isEvent := f1 != nil && f1.Name() == "meta" && f1.Message() != nil && f1.Message().FullName() == metaName
		typ := events.TypeOf(mt.New().Interface())
		switch {
		case isEvent && typ == "":
			t.Errorf("event message %s has no event type: add it to the registry", d.FullName())
		case !isEvent && typ != "":
			t.Errorf("message %s is registered as %q but has no EventMeta at field 1", d.FullName(), typ)
		case isEvent:
			if _, ok := mt.New().Interface().(events.Event); !ok {
				t.Errorf("%s does not implement events.Event", d.FullName())
			}
			// Type names are "<context>.<snake_case message name>", and the
			// context is the proto package's.
			pkg := strings.Split(string(d.FullName()), ".")[1]
			if want := pkg + "." + snake(string(d.Name())); typ != want {
				t.Errorf("%s has type %q, want %q", d.FullName(), typ, want)
			}
		}
		return true
	})
	if seen < len(wantTypes) {
		t.Fatalf("only %d voiceai messages linked in", seen)
	}
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestUnknownAndForeignMessages(t *testing.T) {
	if msg, ok := events.New("agents.agent_exploded"); ok || msg != nil {
		t.Errorf("New(unknown) = %v, %v", msg, ok)
	}
	if _, ok := events.StreamOf("nope"); ok {
		t.Error("StreamOf(unknown) ok")
	}
	if _, err := events.Decode("nope", nil); !errors.Is(err, events.ErrUnknownType) {
		t.Errorf("Decode(unknown) error = %v, want ErrUnknownType", err)
	}
	if _, err := events.Decode(events.TypeAgentCreated, []byte{0xff, 0xff}); err == nil {
		t.Error("Decode(garbage) succeeded")
	}
	agent := &agentsv1.Agent{}
	if got := events.TypeOf(agent); got != "" {
		t.Errorf("TypeOf(Agent) = %q, want empty: aggregates are not events", got)
	}
	if got := events.SchemaOf(agent); got != "voiceai.agents.v1.Agent" {
		t.Errorf("SchemaOf(Agent) = %q", got)
	}
	if events.TypeOf(nil) != "" || events.SchemaOf(nil) != "" || events.MetaOf(nil) != nil || events.MetaOf(agent) != nil {
		t.Error("nil / non-event handling")
	}
	if events.SchemaVersion != "1" {
		t.Errorf("SchemaVersion = %q", events.SchemaVersion)
	}
}

func TestHeaderNames(t *testing.T) {
	got := []string{events.HeaderMsgID, events.HeaderEventID, events.HeaderEventType, events.HeaderSchema,
		events.HeaderSchemaVersion, events.HeaderWorkspaceID, events.HeaderTraceparent}
	want := []string{"Nats-Msg-Id", "Voiceai-Event-Id", "Voiceai-Event-Type", "Voiceai-Schema",
		"Voiceai-Schema-Version", "Voiceai-Workspace-Id", "traceparent"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("headers = %v, want %v", got, want)
	}
}
