package events

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Stream names: one JetStream stream per bounded context.
const (
	IdentityStream = "IDENTITY"
	AgentsStream   = "AGENTS"
	TicketsStream  = "TICKETS"
	// PlatformStream carries the public platform events of spec section 6
	// (conversation_*, call_*, agent_*, system_*), published by producers
	// outside the suite (the voice runtime) as the JSON envelope
	// {event, timestamp, data}.
	PlatformStream = "PLATFORM"
)

// Subject prefixes of each stream.
const (
	IdentitySubjectPrefix = "identity.evt"
	AgentsSubjectPrefix   = "agents.evt"
	SecretsSubjectPrefix  = "agents.secret"
	TicketsSubjectPrefix  = "tickets.evt"
	PlatformSubjectPrefix = "platform.evt"
)

// Identity subject kinds: the third token of an identity subject,
// identity.evt.<workspace_id>.<kind>.<id>.
const (
	IdentityKindWorkspace = "workspace"
	IdentityKindAccount   = "account"
	IdentityKindKey       = "key"
	IdentityKindUser      = "user"
)

// Wildcard filters for subscriptions and consumers.
const (
	// IdentityAll matches every event of stream IDENTITY; it is also the
	// stream's subject.
	IdentityAll = "identity.evt.>"
	// IdentityWorkspacesAll matches workspace events of every workspace.
	IdentityWorkspacesAll = "identity.evt.*.workspace.*"
	// IdentityAccountsAll matches service-account events of every workspace.
	IdentityAccountsAll = "identity.evt.*.account.*"
	// IdentityUsersAll matches user (workspace member) events of every workspace.
	IdentityUsersAll = "identity.evt.*.user.*"
	// IdentityKeysAll matches API-key events of every workspace.
	IdentityKeysAll = "identity.evt.*.key.*"

	// AgentsAll matches every event of stream AGENTS; it is also the
	// stream's subject.
	AgentsAll = "agents.evt.>"
	// SecretsAll matches every workspace secret event (stream AGENTS).
	SecretsAll = "agents.secret.>"

	// TicketsAll matches every event of stream TICKETS.
	TicketsAll = "tickets.evt.>"

	// PlatformAll matches every platform event:
	// platform.evt.<workspace_id>.<event_name>.
	PlatformAll = "platform.evt.>"
)

// PlatformConversationFilters match the conversation_started and
// conversation_ended events of every workspace (a NATS wildcard stands
// for whole tokens only, so each event name is its own filter).
var PlatformConversationFilters = []string{"platform.evt.*.conversation_started", "platform.evt.*.conversation_ended"}

// StreamSpec names a stream and the subjects it captures. The storage and
// retention settings are documented in README.md and applied by the event
// store (file storage, DenyDelete, DenyPurge, Discard new, limits retention).
type StreamSpec struct {
	Name        string
	Subjects    []string
	Description string
	// DedupWindow is how long the stream remembers an append's command
	// id; 0 is the event store's default (10 minutes).
	DedupWindow time.Duration
}

// TestRunsDedupWindow is TESTRUNS' duplicate window: a run's result is
// deduplicated as long as the runners' job queue remembers its job, so a
// redelivered job cannot record a second result.
const TestRunsDedupWindow = time.Hour

// Streams returns the event streams of the suite, in a stable order. The
// slice is a fresh copy on every call.
func Streams() []StreamSpec {
	return []StreamSpec{
		{Name: IdentityStream, Subjects: []string{IdentityAll}, Description: "Workspaces, service accounts and API keys (state-carrying events)"},
		{Name: AgentsStream, Subjects: []string{AgentsAll, SecretsAll}, Description: "Agents and workspace secrets, the values sealed (state-carrying events)"},
		{Name: TicketsStream, Subjects: []string{TicketsAll}, Description: "Conversation triage tickets (state-carrying events)"},
		{Name: PlatformStream, Subjects: []string{PlatformAll}, Description: "Public platform events of spec section 6 (JSON envelopes)"},
		{Name: TestingStream, Subjects: []string{TestingAll}, Description: "Agent tests, test folders and test invocations (state-carrying events)"},
		{Name: TestRunsStream, Subjects: []string{TestRunsAll}, Description: "Test run results and result groups, one subject per run",
			DedupWindow: TestRunsDedupWindow},
		{Name: WebhooksStream, Subjects: []string{WebhooksAll}, Description: "Webhooks (state-carrying events)"},
	}
}

// ErrInvalidToken is wrapped by every error about an id that cannot be used
// as a subject token.
var ErrInvalidToken = errors.New("invalid subject token")

// MaxTokenLen bounds one subject token in bytes. Ids are at most 128
// bytes (the id grammar of pkg/ids); a longer token would make subjects
// that approach the server's 4 KiB control line, and a line beyond it
// makes the server close the publishing connection.
const MaxTokenLen = 128

// ValidateToken reports whether s can be used as one subject token: 1 to
// MaxTokenLen bytes of valid UTF-8 with no '.', '*', '>', whitespace or
// control characters. The error wraps ErrInvalidToken and, since s may
// come from a caller, does not repeat it.
func ValidateToken(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrInvalidToken)
	}
	if len(s) > MaxTokenLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidToken, len(s), MaxTokenLen)
	}
	for _, r := range s {
		switch {
		case r == '.' || r == '*' || r == '>':
			return fmt.Errorf("%w: contains %q", ErrInvalidToken, r)
		case unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar:
			return fmt.Errorf("%w: contains whitespace, a control character or invalid UTF-8", ErrInvalidToken)
		}
	}
	return nil
}

// checkIDs validates ids given as label, value pairs; the label names the
// offending argument in the error.
func checkIDs(labelled ...string) error {
	for i := 0; i+1 < len(labelled); i += 2 {
		if err := ValidateToken(labelled[i+1]); err != nil {
			return fmt.Errorf("%s: %w", labelled[i], err)
		}
	}
	return nil
}

// AgentSubject is the subject of agent agentID's events:
// agents.evt.<workspaceID>.<agentID>.
func AgentSubject(workspaceID, agentID string) (string, error) {
	if err := checkIDs("workspace id", workspaceID, "agent id", agentID); err != nil {
		return "", err
	}
	return AgentsSubjectPrefix + "." + workspaceID + "." + agentID, nil
}

// SecretSubject is the subject of workspace secret secretID's events:
// agents.secret.<workspaceID>.<secretID>.
func SecretSubject(workspaceID, secretID string) (string, error) {
	if err := checkIDs("workspace id", workspaceID, "secret id", secretID); err != nil {
		return "", err
	}
	return SecretsSubjectPrefix + "." + workspaceID + "." + secretID, nil
}

// AgentsOfWorkspace is the filter matching every agent event of one
// workspace: agents.evt.<workspaceID>.*.
func AgentsOfWorkspace(workspaceID string) (string, error) {
	if err := checkIDs("workspace id", workspaceID); err != nil {
		return "", err
	}
	return AgentsSubjectPrefix + "." + workspaceID + ".*", nil
}

// WorkspaceSubject is the subject of workspace workspaceID's events:
// identity.evt.<workspaceID>.workspace.<workspaceID>.
func WorkspaceSubject(workspaceID string) (string, error) {
	return identitySubject(workspaceID, IdentityKindWorkspace, "workspace id", workspaceID)
}

// ServiceAccountSubject is the subject of service account userID's events:
// identity.evt.<workspaceID>.account.<userID>.
func ServiceAccountSubject(workspaceID, userID string) (string, error) {
	return identitySubject(workspaceID, IdentityKindAccount, "user id", userID)
}

// APIKeySubject is the subject of API key keyID's events:
// identity.evt.<workspaceID>.key.<keyID>.
func APIKeySubject(workspaceID, keyID string) (string, error) {
	return identitySubject(workspaceID, IdentityKindKey, "key id", keyID)
}

// UserSubject is the subject of a workspace member's events:
// identity.evt.<workspace_id>.user.<user_id>.
func UserSubject(workspaceID, userID string) (string, error) {
	return identitySubject(workspaceID, IdentityKindUser, "user id", userID)
}

func identitySubject(workspaceID, kind, idLabel, id string) (string, error) {
	if err := checkIDs("workspace id", workspaceID, idLabel, id); err != nil {
		return "", err
	}
	return IdentitySubjectPrefix + "." + workspaceID + "." + kind + "." + id, nil
}

// IdentityOfWorkspace is the filter matching every identity event of one
// workspace: identity.evt.<workspaceID>.>.
func IdentityOfWorkspace(workspaceID string) (string, error) {
	if err := checkIDs("workspace id", workspaceID); err != nil {
		return "", err
	}
	return IdentitySubjectPrefix + "." + workspaceID + ".>", nil
}

// ParseAgentSubject splits agents.evt.<workspaceID>.<agentID>.
func ParseAgentSubject(subject string) (workspaceID, agentID string, err error) {
	t := strings.Split(subject, ".")
	if len(t) != 4 || t[0]+"."+t[1] != AgentsSubjectPrefix || ValidateToken(t[2]) != nil || ValidateToken(t[3]) != nil {
		return "", "", fmt.Errorf("%w: %q is not an agent subject (%s.<workspace_id>.<agent_id>)", ErrInvalidSubject, subject, AgentsSubjectPrefix)
	}
	return t[2], t[3], nil
}

// ParseIdentitySubject splits identity.evt.<workspaceID>.<kind>.<id>, where
// kind is one of IdentityKindWorkspace, IdentityKindAccount, IdentityKindKey, IdentityKindUser.
func ParseIdentitySubject(subject string) (workspaceID, kind, id string, err error) {
	t := strings.Split(subject, ".")
	if len(t) != 5 || t[0]+"."+t[1] != IdentitySubjectPrefix || ValidateToken(t[2]) != nil || ValidateToken(t[4]) != nil {
		return "", "", "", fmt.Errorf("%w: %q is not an identity subject (%s.<workspace_id>.<kind>.<id>)", ErrInvalidSubject, subject, IdentitySubjectPrefix)
	}
	switch t[3] {
	case IdentityKindWorkspace, IdentityKindAccount, IdentityKindKey, IdentityKindUser:
	default:
		return "", "", "", fmt.Errorf("%w: %q has unknown identity kind %q", ErrInvalidSubject, subject, t[3])
	}
	return t[2], t[3], t[4], nil
}

// ErrInvalidSubject is wrapped by the Parse* functions' errors.
var ErrInvalidSubject = errors.New("invalid event subject")

// TicketSubject is the subject of a ticket's events:
// tickets.evt.<workspace_id>.<ticket_id>.
func TicketSubject(workspaceID, ticketID string) (string, error) {
	if err := checkIDs("workspace_id", workspaceID, "ticket_id", ticketID); err != nil {
		return "", err
	}
	return TicketsSubjectPrefix + "." + workspaceID + "." + ticketID, nil
}

// ConversationAnnotationsSubject is the subject of the feedback and tags
// people add to a conversation, beside the tickets on stream TICKETS: the
// prefix keeps a conversation id from ever meeting a ticket's subject.
func ConversationAnnotationsSubject(workspaceID, conversationID string) (string, error) {
	if err := checkIDs("workspace_id", workspaceID, "conversation_id", conversationID); err != nil {
		return "", err
	}
	return TicketsSubjectPrefix + "." + workspaceID + ".cv-" + conversationID, nil
}

// PlatformSubject is where a platform event is published:
// platform.evt.<workspace_id>.<event_name>.
func PlatformSubject(workspaceID, eventName string) (string, error) {
	if err := checkIDs("workspace_id", workspaceID, "event", eventName); err != nil {
		return "", err
	}
	return PlatformSubjectPrefix + "." + workspaceID + "." + eventName, nil
}

// SubjectMatches reports whether subject matches a NATS filter ('*' one
// token, '>' the rest): what a stream or consumer filter selects, for code
// that filters without a server (memory adapters, tests).
func SubjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(f) == len(s)
}

// ParsePlatformSubject splits platform.evt.<workspace_id>.<event_name>;
// ok is false for any other subject.
func ParsePlatformSubject(subject string) (workspaceID, eventName string, ok bool) {
	parts := strings.Split(subject, ".")
	if len(parts) != 4 || parts[0]+"."+parts[1] != PlatformSubjectPrefix || parts[2] == "" || parts[3] == "" {
		return "", "", false
	}
	return parts[2], parts[3], true
}
