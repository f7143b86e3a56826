package projection

import (
	"context"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// States is the Handler of a projection of aggregates of state type S.
// Events carry their aggregate's whole state (events.StateOf); docOf turns
// it into the document's id and body. A record of another aggregate is
// skipped. An undecodable record is an error: the projection retries it
// rather than skip a state.
func States[S proto.Message](docOf func(S) (id string, doc any)) Handler {
	return func(_ context.Context, rec eventstore.Record) (string, any, error) {
		msg, err := esproto.Decode(rec)
		if err != nil {
			return "", nil, err
		}
		s, ok := events.StateOf[S](msg)
		if !ok {
			return "", nil, nil
		}
		id, doc := docOf(s)
		return id, doc, nil
	}
}
