package tickets

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// ensureOtherStreams makes the agents' and identity's streams, which the
// directory follows, as those services would.
func ensureOtherStreams(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	for name, subject := range map[string]string{events.AgentsStream: events.AgentsAll, events.IdentityStream: events.IdentityAll} {
		if _, err := eventstore.EnsureStream(ctx, js, eventstore.StreamConfig{Name: name, Subjects: []string{subject}}); err != nil {
			t.Fatal(err)
		}
	}
}

// serve calls svc's handler as caller, and answers the status and body.
func serve(svc *Service, method, path, body string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	caller.SetHeaders(req.Header)
	rec := httptest.NewRecorder()
	svc.Handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}
