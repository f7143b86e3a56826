// Package slots shares a bounded number of slots out between tenants: at
// most Max taken in all, at most PerTenant by any one tenant, so that
// whatever one tenant asks for, the others keep room.
package slots

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrFull is TryAcquire's answer when every slot is taken; ErrTenantFull
// when the tenant holds its share.
var (
	ErrFull       = errors.New("slots: every slot is taken")
	ErrTenantFull = errors.New("slots: the tenant holds its share of the slots")
)

// Fair is a set of slots shared out between tenants. The zero value is not
// usable: make one with New.
type Fair struct {
	max, perTenant int
	now            func() time.Time

	mu        sync.Mutex
	total     int
	byTenant  map[string]int
	fullSince time.Time     // zero while a slot is free
	freed     chan struct{} // closed at the next release
}

// New is max slots, at most perTenant of them for one tenant.
func New(max, perTenant int) *Fair {
	return &Fair{max: max, perTenant: min(perTenant, max), now: time.Now, byTenant: map[string]int{}, freed: make(chan struct{})}
}

// TryAcquire takes a slot for tenant if one is free to it, or says why not.
func (f *Fair) TryAcquire(tenant string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.take(tenant)
}

// Acquire takes a slot for tenant, waiting for one as long as ctx lasts.
func (f *Fair) Acquire(ctx context.Context, tenant string) error {
	for {
		f.mu.Lock()
		err := f.take(tenant)
		freed := f.freed
		f.mu.Unlock()
		if err == nil {
			return nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (f *Fair) take(tenant string) error {
	switch {
	case f.total >= f.max:
		return ErrFull
	case f.byTenant[tenant] >= f.perTenant:
		return ErrTenantFull
	}
	f.total++
	f.byTenant[tenant]++
	if f.total == f.max {
		f.fullSince = f.now()
	}
	return nil
}

// Release gives back a slot tenant took.
func (f *Fair) Release(tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if f.byTenant[tenant]--; f.byTenant[tenant] <= 0 {
		delete(f.byTenant, tenant)
	}
	f.fullSince = time.Time{}
	close(f.freed)
	f.freed = make(chan struct{})
}

// FullFor is how long every slot has stayed taken (0 while one is free).
func (f *Fair) FullFor() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fullSince.IsZero() {
		return 0
	}
	return f.now().Sub(f.fullSince)
}

// SetClock replaces the wall clock FullFor reads, for tests.
func (f *Fair) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}
