package eventstore

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/eventlogtest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	js, err := jetstream.New(env.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStream(context.Background(), js, StreamConfig{Name: "TEST", Subjects: []string{"test.>"}}); err != nil {
		t.Fatal(err)
	}
	return New(js, "TEST")
}

func ev(data string) Event { return Event{Type: "test.happened", Workspace: "ws", Data: []byte(data)} }

// The JetStream store passes the port's conformance suite.
func TestConforms(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T) eventlog.Store { return newStore(t) })
}

func TestConflictIsJudgedByErrorCode(t *testing.T) {
	if !IsConflict(&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "anything"}) ||
		!IsConflict(&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant}) ||
		IsConflict(&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamNotFound, Description: "wrong last sequence"}) {
		t.Fatal("IsConflict must judge by error code only")
	}
}

// Subscribers tapping the stream read an event's contract from its
// headers.
func TestRecordsCarryTheContractHeaders(t *testing.T) {
	s, ctx := newStore(t), context.Background()
	e := ev("1")
	e.Schema, e.SchemaVersion = "voiceai.test.v1.Happened", "1"
	if _, err := s.Append(ctx, "test.a", 0, "cmd-1", e); err != nil {
		t.Fatal(err)
	}
	rec, _, err := s.Last(ctx, "test.a")
	if err != nil || rec.Header.Get(events.HeaderSchema) != e.Schema || rec.Header.Get(events.HeaderSchemaVersion) != "1" ||
		rec.Header.Get(events.HeaderEventType) != "test.happened" || rec.Header.Get(jetstream.MsgIDHeader) != "cmd-1" {
		t.Fatalf("headers: %+v %v", rec.Header, err)
	}
}
