package events

import (
	"errors"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// StateOf returns the aggregate state of type S (a generated message
// pointer, such as *agentsv1.Agent) that msg carries. Events are
// state-carrying: each holds its whole aggregate in one field, so the state
// is msg's field of S's message type. ok is false when msg carries no S
// (an event of another aggregate, or none at all).
//
// This is the one place that knows the convention; a new event type
// carrying an aggregate is read by every consumer of that aggregate
// without a list of event types to extend.
func StateOf[S proto.Message](msg proto.Message) (state S, ok bool) {
	if msg == nil {
		return state, false
	}
	m := msg.ProtoReflect()
	f := stateField(m.Descriptor(), state.ProtoReflect().Descriptor().FullName())
	if f == nil || !m.Has(f) {
		return state, false
	}
	state, ok = m.Get(f).Message().Interface().(S)
	return state, ok
}

// StateBytes is StateOf on an event still encoded: the encoding of the
// aggregate state of type S that an event of eventType carries in data,
// read without decoding the event (a sub-slice of data). ok is false
// when events of that type carry no S, or this one has none. An error
// says data cannot be read so; StateOf on the decoded event is then the
// way (it also merges a state the encoding gives in parts, which no
// producer of ours writes).
func StateBytes[S proto.Message](eventType string, data []byte) (state []byte, ok bool, err error) {
	desc, known := descOf[eventType]
	if !known {
		return nil, false, nil
	}
	var zero S
	f := stateField(desc, zero.ProtoReflect().Descriptor().FullName())
	if f == nil {
		return nil, false, nil
	}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, false, protowire.ParseError(n)
		}
		data = data[n:]
		if num == f.Number() && typ == protowire.BytesType {
			if ok {
				return nil, false, errStateInParts
			}
			if state, n = protowire.ConsumeBytes(data); n < 0 {
				return nil, false, protowire.ParseError(n)
			}
			ok = true
		} else if n = protowire.ConsumeFieldValue(num, typ, data); n < 0 {
			return nil, false, protowire.ParseError(n)
		}
		data = data[n:]
	}
	return state, ok, nil
}

var errStateInParts = errors.New("events: the state is encoded in parts")

type stateKey struct{ event, state protoreflect.FullName }

// stateFields caches, per event type and state type, the field holding the
// state (nil: the event carries none).
var stateFields sync.Map // stateKey → cachedField

type cachedField struct{ f protoreflect.FieldDescriptor }

func stateField(event protoreflect.MessageDescriptor, state protoreflect.FullName) protoreflect.FieldDescriptor {
	key := stateKey{event.FullName(), state}
	if c, ok := stateFields.Load(key); ok {
		return c.(cachedField).f
	}
	var found protoreflect.FieldDescriptor
	fields := event.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.Kind() == protoreflect.MessageKind && !f.IsList() && !f.IsMap() && f.Message().FullName() == state {
			found = f
			break
		}
	}
	stateFields.Store(key, cachedField{found})
	return found
}
