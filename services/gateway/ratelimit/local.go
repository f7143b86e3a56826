package ratelimit

import (
	"sync"
	"time"
)

// Local counts the same windows in this process alone. The gateway falls
// back on it while the shared counters cannot answer (a stream leader
// election, a NATS restart): each replica then enforces the limits on the
// traffic it sees, so a key gets at most replicas × its limit for that
// moment, instead of every request failing (closed) or none being
// counted (open).
type Local struct {
	mu      sync.Mutex
	minute  time.Time        // the window minuteN counts
	hour    time.Time        // the window hourN counts
	minuteN map[string]int64 // by key
	hourN   map[string]int64
}

// NewLocal returns an empty local limiter.
func NewLocal() *Local { return &Local{minuteN: map[string]int64{}, hourN: map[string]int64{}} }

// Allow counts one request of key against lim at now, if it may pass.
func (l *Local) Allow(key string, lim Limits, now time.Time) Decision {
	minute := window("minute", now, time.Minute, lim.PerMinute)
	hour := window("hour", now, time.Hour, lim.PerHour)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !minute.Reset.Equal(l.minute) { // a new window forgets the last one's counts
		l.minute, l.minuteN = minute.Reset, map[string]int64{}
	}
	if !hour.Reset.Equal(l.hour) {
		l.hour, l.hourN = hour.Reset, map[string]int64{}
	}
	minute.Remaining = lim.PerMinute - l.minuteN[key] - 1
	hour.Remaining = lim.PerHour - l.hourN[key] - 1
	d := Decision{Allowed: minute.Remaining >= 0 && hour.Remaining >= 0, Minute: minute, Hour: hour}
	if d.Allowed {
		l.minuteN[key]++
		l.hourN[key]++
	}
	d.Minute.Remaining = max(d.Minute.Remaining, 0)
	d.Hour.Remaining = max(d.Hour.Remaining, 0)
	return d
}
