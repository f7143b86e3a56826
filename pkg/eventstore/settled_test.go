package eventstore

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// inProcess answers "a message with this id is still being stored" to the
// first busy publishes, then acknowledges the first attempt's message.
type inProcess struct {
	jetstream.JetStream
	busy, calls int
}

func (s *inProcess) PublishMsg(context.Context, *nats.Msg, ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	s.calls++
	if s.calls <= s.busy {
		return nil, &jetstream.APIError{Code: 409, ErrorCode: duplicateInProcess, Description: "duplicate message id is in process"}
	}
	return &jetstream.PubAck{Stream: "S", Sequence: 7, Duplicate: true}, nil
}

// A command sent again while its first attempt is still being stored is
// answered, once that attempt is stored, as its duplicate; a store that
// stays busy is a "retry later" (503), never an internal error.
func TestPublishWaitsOutADuplicateInProcess(t *testing.T) {
	js := &inProcess{busy: 2}
	ack, err := Publish(context.Background(), js, nats.NewMsg("s.1"), jetstream.WithMsgID("cmd-1"))
	if err != nil || !ack.Duplicate || ack.Sequence != 7 || js.calls != 3 {
		t.Fatalf("ack %+v, err %v after %d publishes; want the first attempt's, as a duplicate, after 3", ack, err, js.calls)
	}
	js = &inProcess{busy: 100}
	_, err = Publish(context.Background(), js, nats.NewMsg("s.1"), jetstream.WithMsgID("cmd-1"))
	var u interface{ Unavailable() bool }
	if err == nil || !errors.As(err, &u) || !u.Unavailable() || js.calls > 10 {
		t.Fatalf("a store busy for good: %v after %d publishes; want unavailable after a few", err, js.calls)
	}
}
