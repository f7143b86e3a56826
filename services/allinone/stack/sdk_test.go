package stack

import (
	"testing"
	"time"
)

// The official @elevenlabs/elevenlabs-js SDK, pointed at the stack,
// parses every response of the endpoints it covers (e2e/sdk), and its
// webhooks.constructEvent verifies the deliveries it receives (at
// 127.0.0.1, which the stack lets webhooks reach).
func TestOfficialSDK(t *testing.T) {
	t.Parallel()
	script := e2eSuite(t, "sdk")
	s := startAdmin(t, localHooks)
	// A conversation the platform has seen, for creating tickets on it.
	agent := newAgent(t, s, adminKey, "SDK tickets")
	publishConversation(t, s, "ws_default", "conversation_started", "conv_sdk", agent, time.Now())
	runE2E(t, s, script, nil, "VOICEAI_E2E_AGENT_ID="+agent, "VOICEAI_E2E_CONVERSATION_ID=conv_sdk")
}
