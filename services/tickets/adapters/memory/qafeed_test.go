package memory

import (
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/qafeedtest"
)

// The memory feed passes the suite the JetStream one passes (in package
// adapters). Messages are pushed as the JetStream feed hands them over:
// a protobuf event encoded as an append encodes it and decoded as a
// consumer decodes it, so a body that does not decode comes with its
// error.
func TestQAFeedConforms(t *testing.T) {
	qafeedtest.Run(t, func(t *testing.T, batch int) (app.QAFeed, qafeedtest.Put) {
		feed := NewQAFeed()
		feed.Batch = batch
		return feed, func(source app.QASource, msgs ...qafeedtest.Message) {
			for _, m := range msgs {
				feed.Push(source, received(t, source, m))
			}
		}
	})
}

// received is m as a consumer of source's stream reads it.
func received(t *testing.T, source app.QASource, m qafeedtest.Message) app.QAMessage {
	t.Helper()
	out := app.QAMessage{Subject: m.Subject, Traceparent: m.Traceparent, Data: m.Body, RunStatus: m.RunStatus}
	if m.Event == nil {
		return out
	}
	e := qafeedtest.Encoded(t, m)
	out.Data = e.Data
	if !app.DecodesRun(m.RunStatus) || source == app.QATickets && !app.DecodesTicket(e.Type, e.Data) {
		return out
	}
	out.Event, out.Err = esproto.Decode(eventlog.Record{Subject: m.Subject, Type: e.Type, Data: e.Data})
	return out
}
