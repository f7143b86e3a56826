// Package testclient gives a test an llm.Client of an llmtest server.
// (llmtest itself does not import llm, so that llm's own tests can use it.)
package testclient

import (
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
)

// New starts an llmtest server answering with h, closed when the test
// ends, and returns a client of it for the model "test-model". Back-off
// waits are one millisecond, so that retries cost a test nothing, unless
// mod changes them.
func New(t testing.TB, h llmtest.Handler, mod func(*llm.Config)) (*llm.Client, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(h)
	t.Cleanup(srv.Close)
	c := llm.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "test-model", Timeout: time.Minute,
		MaxRetries: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	if mod != nil {
		mod(&c)
	}
	cl, err := llm.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return cl, srv
}
