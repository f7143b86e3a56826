package adapters

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/backlogtest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/relaytest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/sendertest"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
)

// The sender over HTTP (endpoints on 127.0.0.1, which the operator
// allowed) and the relay on embedded NATS.
func TestSenderConforms(t *testing.T) {
	sendertest.Run(t, func(t *testing.T) (app.Sender, func(sendertest.Receiver) string) {
		nc := testenv.ConnAt(t, testenv.StartNATS(t))
		s := NewSender(delivery.NewSender(outbound.NewGuard([]string{"127.0.0.1"}), 2*time.Second), Relay{NC: nc})
		return s, func(receive sendertest.Receiver) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Error(err)
				}
				a := receive(r.Header, body)
				if a.RetryAfter != "" {
					w.Header().Set("Retry-After", a.RetryAfter)
				}
				w.WriteHeader(a.Status)
				_, _ = w.Write(a.Body)
			}))
			if receive == nil {
				srv.Close() // nobody listens at its address any more
				return srv.URL + "/hook"
			}
			t.Cleanup(srv.Close)
			return srv.URL + "/hook"
		}
	})
}

func TestRelayConforms(t *testing.T) {
	relaytest.Run(t, func(t *testing.T) (app.Relay, app.Sender) {
		rl := Relay{NC: testenv.ConnAt(t, testenv.StartNATS(t))}
		s := NewSender(delivery.NewSender(outbound.NewGuard(nil), 300*time.Millisecond), rl)
		return s.Relay, s
	})
}

func TestStreamBacklogConforms(t *testing.T) {
	backlogtest.Run(t, func(t *testing.T) (app.Backlog, app.Queue, func(*webhooksv1.DeliveryJob)) {
		js := testenv.StreamsAt(t, EnsureStreams)
		// Delivered: the job's message leaves the work queue, as when the
		// dispatcher acknowledges it.
		deliver := func(job *webhooksv1.DeliveryJob) {
			for _, m := range streamMessages(t, js, events.WebhookDeliveriesStream) {
				if m.Header.Get(events.HeaderMsgID) == app.JobID(job) {
					deleteMsg(t, js, m.Sequence)
					return
				}
			}
			t.Fatalf("job %s is not queued", app.JobID(job))
		}
		return StreamBacklog{JS: js}, StreamQueue{JS: js}, deliver
	})
}

func deleteMsg(t *testing.T, js jetstream.JetStream, seq uint64) {
	t.Helper()
	str, err := js.Stream(context.Background(), events.WebhookDeliveriesStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := str.DeleteMsg(context.Background(), seq); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
}
