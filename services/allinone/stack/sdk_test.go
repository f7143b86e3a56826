package stack

import (
	"testing"
	"time"
)

// The official @elevenlabs/elevenlabs-js SDK, pointed at the stack,
// parses every response of the endpoints it covers (e2e/sdk).
func TestOfficialSDK(t *testing.T) {
	script := e2eSuite(t, "sdk")
	s := startAdmin(t)
	// A conversation the platform has seen, for creating tickets on it.
	agent := newAgent(t, s, adminKey, "SDK tickets")
	publishConversation(t, s, "ws_default", "conversation_started", "conv_sdk", agent, time.Now())
	runE2E(t, script, s, "VOICEAI_E2E_AGENT_ID="+agent, "VOICEAI_E2E_CONVERSATION_ID=conv_sdk")
}
