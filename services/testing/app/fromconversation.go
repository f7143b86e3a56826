package app

import (
	"context"
	"encoding/json"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// ParseFromConversation decodes and validates a from-conversation body:
// 400 for malformed JSON, 422 with loc for wrong types and broken rules.
// It also returns the transcript's messages as posted, which the test
// keeps verbatim.
func ParseFromConversation(body []byte) (domain.FromConversation, []json.RawMessage, error) {
	var in domain.FromConversation
	if err := apperr.DecodeJSON(body, &in); err != nil {
		return in, nil, err
	}
	var raw struct {
		Transcript []json.RawMessage `json:"transcript"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return in, nil, apperr.NotJSONObject
	}
	var v apperr.Validator
	if raw.Transcript != nil {
		in.Validate(&v) // else once the recorded transcript is in
	}
	v.BoundStrings(body, domain.MaxTextLen, "body")
	return in, raw.Transcript, v.Err()
}

// RegressionTestBody is the create-test body of a validated request.
func RegressionTestBody(in domain.FromConversation, transcript []json.RawMessage) []byte {
	b, _ := json.Marshal(in.RegressionTest(transcript))
	return b
}

// StoredConversations reads the conversations the platform has recorded
// (the tickets service keeps them).
type StoredConversations interface {
	// Conversation returns the agent and the transcript of a conversation
	// of the caller's workspace: apperr.ConversationUnknown when there is
	// none.
	Conversation(ctx context.Context, c principal.Caller, conversationID string) (agentID string, transcript []json.RawMessage, err error)
}

// ConversationDocuments reads recorded conversations whole.
type ConversationDocuments interface {
	// Document is the conversation of the caller's workspace as the public
	// GET answers it (a JSON object): apperr.ConversationUnknown when there
	// is none.
	Document(ctx context.Context, c principal.Caller, conversationID string) (json.RawMessage, error)
}

// CreateTestFromConversation stores an llm test that replays a production
// conversation up to the agent turn that went wrong (see
// domain.FromConversation.RegressionTest): the conversation the body
// posts, or, when it posts no transcript, the one the platform recorded
// under its conversation_id. The body is checked first, then the agent
// (404 agent_not_found), then the folder; the test itself passes the
// rules of any created test.
func (a *App) CreateTestFromConversation(ctx context.Context, c principal.Caller, body []byte) (*testingv1.Test, error) {
	if t, ok, err := createdBefore(ctx, a.Tests, c, testKeyedID(c)); err != nil || ok {
		return t, err
	}
	in, transcript, err := ParseFromConversation(body)
	if err != nil {
		return nil, err
	}
	if transcript == nil {
		if in, transcript, err = a.storedConversation(ctx, c, in); err != nil {
			return nil, err
		}
	}
	if _, err := a.Agent(ctx, c.WorkspaceID, *in.AgentID); err != nil {
		return nil, err
	}
	if err := a.checkFolder(ctx, c.WorkspaceID, deref(in.ParentFolderID), "parent_folder_id"); err != nil {
		return nil, err
	}
	test, raw, err := ParseTest(RegressionTestBody(in, transcript))
	if err != nil {
		return nil, err // the request's rules keep the test within the test rules
	}
	return a.createTest(ctx, c, test, raw)
}

// storedConversation completes a request that names a recorded
// conversation: its transcript and its agent (one the request names must
// be it); the completed request is validated as a posted one is.
func (a *App) storedConversation(ctx context.Context, c principal.Caller, in domain.FromConversation) (domain.FromConversation, []json.RawMessage, error) {
	if a.Conversations == nil {
		return in, nil, apperr.ConversationUnknown
	}
	agentID, transcript, err := a.Conversations.Conversation(ctx, c, *in.ConversationID)
	if err != nil {
		return in, nil, err
	}
	var v apperr.Validator
	if len(transcript) == 0 {
		v.Add("The conversation has no transcript: its conversation_ended handed none over; post the transcript instead", "value_error", "body", "conversation_id")
		return in, nil, v.Err()
	}
	if in.AgentID == nil {
		in.AgentID = &agentID
	} else if agentID != "" && *in.AgentID != agentID {
		// The test's from_conversation_metadata names the conversation's
		// agent: another would misstate where the conversation came from.
		v.Add("The conversation belongs to agent "+agentID, "value_error", "body", "agent_id")
		return in, nil, v.Err()
	}
	body, _ := json.Marshal(transcript)
	if err := json.Unmarshal(body, &in.Transcript); err != nil {
		return in, nil, err
	}
	in.Validate(&v)
	return in, transcript, v.Err()
}
