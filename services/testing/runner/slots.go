package runner

import "context"

// A run holds one of its worker's slots while it runs. While it waits on
// something outside the worker (an agent endpoint's slot) it gives the
// slot back, so a slow or dead endpoint ties up no more of the worker
// than the requests it has in flight.

type slotKey struct{}

// withSlot is ctx for a run whose slot pause gives back; pause returns
// the function that takes it again.
func withSlot(ctx context.Context, pause func() (resume func())) context.Context {
	return context.WithValue(ctx, slotKey{}, pause)
}

// releaseSlot gives back the run's slot while it waits; call resume once
// it runs again. Outside a worker it does nothing.
func releaseSlot(ctx context.Context) (resume func()) {
	if pause, ok := ctx.Value(slotKey{}).(func() func()); ok {
		return pause()
	}
	return func() {}
}
