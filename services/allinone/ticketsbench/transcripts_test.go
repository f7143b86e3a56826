package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// The million's ingest bodies are what the gateway accepts: the section
// posts them through POST /v1/convai/events, where the event schema
// refused every conversation with a tool call once a tool call's shape
// required tool_has_been_called, and `make bench-million` stopped at its
// first 422.
func TestMillionEventsAreAccepted(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	withTools := 0
	for i := range 300 {
		started, ended := millionEvents(i, []string{"agent_1", "agent_2"}, base)
		for _, body := range []string{started, ended} {
			req := httptest.NewRequest(api.IngestEvent.Method, api.IngestEvent.Path, strings.NewReader(body))
			if err := api.CheckBody(req, api.IngestEvent); err != nil {
				t.Fatalf("conversation %d: %v\n%s", i, err, body)
			}
		}
		if strings.Contains(ended, `"tool_calls"`) {
			withTools++
		}
	}
	if withTools == 0 {
		t.Fatal("no conversation had a tool call: the check missed their shape")
	}
}
