package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/natsx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/requestid"
)

// StoredConversations asks the tickets service, which keeps the
// conversations, for one: the same read the public API serves, on the
// caller's behalf and with read permission only.
type StoredConversations struct{ fwd *natsx.Forwarder }

// NewStoredConversations asks over nc.
func NewStoredConversations(nc *nats.Conn) StoredConversations {
	return StoredConversations{fwd: &natsx.Forwarder{NC: nc, Timeout: 10 * time.Second}}
}

// Conversation returns the conversation's agent and transcript.
func (s StoredConversations) Conversation(ctx context.Context, c principal.Caller, conversationID string) (string, []json.RawMessage, error) {
	body, err := s.Document(ctx, c, conversationID)
	if err != nil {
		return "", nil, err
	}
	var conv struct {
		AgentID    string            `json:"agent_id"`
		Transcript []json.RawMessage `json:"transcript"`
	}
	if err := json.Unmarshal(body, &conv); err != nil {
		return "", nil, fmt.Errorf("conversation %s from the tickets service: %w", conversationID, err)
	}
	return conv.AgentID, conv.Transcript, nil
}

// Document returns the conversation as the public GET answers it (a JSON
// object).
func (s StoredConversations) Document(ctx context.Context, c principal.Caller, conversationID string) (json.RawMessage, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/v1/convai/conversations/"+url.PathEscape(conversationID), nil)
	if err != nil {
		return nil, err
	}
	principal.Principal{WorkspaceID: c.WorkspaceID, UserID: c.UserID, Permissions: []string{"convai_read"}}.SetHeaders(r.Header)
	r.Header.Set(httpx.HeaderRequestID, requestid.From(ctx))
	status, body := s.fwd.Call(r, "tickets")
	switch status {
	case http.StatusOK:
		return body, nil
	case http.StatusNotFound:
		return nil, apperr.ConversationUnknown
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusBadGateway:
		return nil, apperr.UpstreamUnavailable("tickets") // 503, Retry-After: the caller may retry
	default:
		return nil, fmt.Errorf("conversation %s from the tickets service: %d %s", conversationID, status, body)
	}
}
