package cli

import (
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// tail prints events: TESTRUNS' records that are not (queued totals,
// completion claims: no type header, decimal text) are skipped, not shown
// as undecodable; a PLATFORM event, which carries no type header either,
// is shown with its name.
func TestTailSkipsWhatIsNotAnEvent(t *testing.T) {
	if _, ok := decodeTailed(events.TestRunsStream, eventstore.Record{Subject: "testruns.queued.ws_1.tinv_1", Data: []byte("25")}); ok {
		t.Error("a queued total was printed")
	}
	ev, ok := decodeTailed(events.PlatformStream, eventstore.Record{Subject: "platform.evt.ws_1.call_started", Data: []byte(`{"event":"call_started","data":{}}`)})
	if !ok || ev.Type != "call_started" || ev.WorkspaceID != "ws_1" {
		t.Errorf("a platform event: %+v %v", ev, ok)
	}
}
