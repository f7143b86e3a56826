package natsx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/slots"
)

// MaxConcurrent bounds the requests one service process handles at once.
const MaxConcurrent = 256

// MaxPerWorkspace bounds the requests of one workspace a process handles
// at once: whatever one key sends (reads left unread, slow requests), the
// other half of the slots stay for everyone else.
const MaxPerWorkspace = MaxConcurrent / 2

// saturatedFor is how long every slot may stay taken before the process
// reports itself not ready: it cannot take new work.
const saturatedFor = 2 * time.Second

// verdict is what admission decides for a request.
type verdict int

const (
	admitted   verdict = iota
	duplicate          // another attempt of a request this process is serving
	abandoned          // its forwarder gave up on it before it arrived
	overTenant         // its workspace holds its share of the slots
	full               // every slot is taken
)

// admission bounds the requests a process serves at once, in all and per
// workspace, and knows each one in flight by the id its forwarder gave it:
// a hedge of a request still served here is dropped (the first attempt
// answers it) and a forwarder that gave up reaches it (cancel).
type admission struct {
	slots *slots.Fair

	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc
	// gaveUp are the requests cancelled before they arrived, by when: a
	// request waits in its subscription's queue behind others, and its
	// forwarder's cancel, on another subscription, can overtake it.
	gaveUp map[string]time.Time
}

// Bounds of what admission remembers of requests cancelled before they
// arrived: for how long (a request waits in the queue far less), and how
// many (the cancels of every replica's requests reach each replica).
const (
	gaveUpFor  = time.Minute
	gaveUpKept = 10_000
)

func newAdmission(max, perTenant int) *admission {
	return &admission{slots: slots.New(max, perTenant), inflight: map[string]context.CancelCauseFunc{}, gaveUp: map[string]time.Time{}}
}

// admit takes a slot for a request of tenant known by id ("" for none),
// whose handling cancel ends.
func (a *admission) admit(tenant, id string, cancel context.CancelCauseFunc) verdict {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id != "" && a.inflight[id] != nil {
		return duplicate
	}
	if at, ok := a.gaveUp[id]; ok && id != "" {
		delete(a.gaveUp, id)
		if time.Since(at) <= gaveUpFor {
			return abandoned
		}
	}
	switch err := a.slots.TryAcquire(tenant); {
	case errors.Is(err, slots.ErrFull):
		return full
	case err != nil:
		return overTenant
	}
	if id != "" {
		a.inflight[id] = cancel
	}
	return admitted
}

// release gives back what admit took.
func (a *admission) release(tenant, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.slots.Release(tenant)
	if id != "" {
		delete(a.inflight, id)
	}
}

// errCallerGaveUp ends a request whose forwarder stopped waiting for it.
var errCallerGaveUp = errors.New("natsx: the caller gave up on the request")

// cancel ends the handling of the request known by id, if it is here,
// and otherwise has it dropped if it arrives later.
func (a *admission) cancel(id string) {
	a.mu.Lock()
	stop := a.inflight[id]
	if stop == nil && id != "" {
		a.rememberGaveUp(id, time.Now())
	}
	a.mu.Unlock()
	if stop != nil {
		stop(errCallerGaveUp)
	}
}

// rememberGaveUp records id as given up at now, within the bounds; a.mu
// is held.
func (a *admission) rememberGaveUp(id string, now time.Time) {
	if len(a.gaveUp) >= gaveUpKept {
		for k, at := range a.gaveUp {
			if now.Sub(at) > gaveUpFor {
				delete(a.gaveUp, k)
			}
		}
		for k := range a.gaveUp { // still full, all of it recent: half goes, whichever
			if len(a.gaveUp) < gaveUpKept/2 {
				break
			}
			delete(a.gaveUp, k)
		}
	}
	a.gaveUp[id] = now
}

// Ready fails while every slot has been taken for saturatedFor: the
// process takes no new request, so it should not be sent any.
func (a *admission) Ready(context.Context) error {
	if d := a.slots.FullFor(); d >= saturatedFor {
		return fmt.Errorf("all %d request slots taken for %s", MaxConcurrent, d.Round(time.Second))
	}
	return nil
}
