package events

import (
	"sync"

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
