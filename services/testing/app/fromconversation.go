package app

import (
	"context"
	"encoding/json"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
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
	in.Validate(&v)
	v.BoundStrings(body, domain.MaxTextLen, "body")
	return in, raw.Transcript, v.Err()
}

// RegressionTestBody is the create-test body of a validated request.
func RegressionTestBody(in domain.FromConversation, transcript []json.RawMessage) []byte {
	b, _ := json.Marshal(in.RegressionTest(transcript))
	return b
}

// CreateTestFromConversation stores an llm test that replays a production
// conversation up to the agent turn that went wrong (see
// domain.FromConversation.RegressionTest). The body is checked first, then
// the agent (404 agent_not_found), then the folder; the test itself passes
// the rules of any created test.
func (a *App) CreateTestFromConversation(ctx context.Context, c Caller, body []byte) (*testingv1.Test, error) {
	in, transcript, err := ParseFromConversation(body)
	if err != nil {
		return nil, err
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
