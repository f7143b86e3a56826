package stack

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The official @elevenlabs/elevenlabs-js SDK, pointed at the stack,
// parses every response of the endpoints it covers (e2e/sdk).
func TestOfficialSDK(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the official SDK tests need Node 20 (" + err.Error() + ")")
	}
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "..", "e2e", "sdk", "run.sh")
	s := startAdmin(t)
	// A conversation the platform has seen, for creating tickets on it.
	agent := newAgent(t, s, adminKey, "SDK tickets")
	publishConversation(t, s, "ws_default", "conversation_started", "conv_sdk", agent, time.Now())
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "VOICEAI_BASE_URL=http://"+s.Addr, "VOICEAI_API_KEY="+adminKey,
		"VOICEAI_E2E_AGENT_ID="+agent, "VOICEAI_E2E_CONVERSATION_ID=conv_sdk")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Log(out.String())
	if err != nil {
		t.Fatalf("SDK end-to-end tests failed: %v", err)
	}
}
