package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

func newLimiter(t *testing.T, url string, now time.Time) *Limiter {
	t.Helper()
	l, err := New(context.Background(), testenv.JetStreamAt(t, url), 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return now }
	return l
}

func TestExactLimitAcrossTwoLimiters(t *testing.T) {
	url := testenv.StartNATS(t)
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	a, b := newLimiter(t, url, now), newLimiter(t, url, now)
	lim := Limits{PerMinute: 100, PerHour: 1000}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 150 {
		wg.Add(1)
		go func(l *Limiter) {
			defer wg.Done()
			d, err := l.Allow(context.Background(), "key1", lim)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		}([]*Limiter{a, b}[i%2])
	}
	wg.Wait()
	if got := allowed.Load(); got != 100 {
		t.Fatalf("allowed %d of 150, want exactly 100", got)
	}
	// Refused requests were given back: the hour has counted 100 only.
	d, err := a.Allow(context.Background(), "key1", lim)
	if err != nil || d.Allowed || d.Hour.Remaining != 900 || d.Minute.Remaining != 0 {
		t.Fatalf("after the burst: %+v %v", d, err)
	}
	// The next minute window admits again.
	a.Now = func() time.Time { return now.Add(time.Minute) }
	if d, err := a.Allow(context.Background(), "key1", lim); err != nil || !d.Allowed || d.Hour.Remaining != 899 {
		t.Fatalf("next minute: %+v %v", d, err)
	}
	// Another key is independent.
	if d, err := b.Allow(context.Background(), "key2", lim); err != nil || !d.Allowed || d.Minute.Remaining != 99 {
		t.Fatalf("other key: %+v %v", d, err)
	}
}

func TestHourLimitAndHeaders(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 59, 50, 0, time.UTC)
	l := newLimiter(t, testenv.StartNATS(t), now)
	lim := Limits{PerMinute: 10, PerHour: 3}
	for i := range 3 {
		if d, _ := l.Allow(context.Background(), "k", lim); !d.Allowed {
			t.Fatalf("request %d refused", i)
		}
	}
	d, err := l.Allow(context.Background(), "k", lim)
	if err != nil || d.Allowed {
		t.Fatalf("4th request in the hour: %+v %v", d, err)
	}
	if n := d.Nearest(); n.Name != "hour" || n.Remaining != 0 {
		t.Fatalf("nearest window: %+v", n)
	}
	h := http.Header{}
	SetHeaders(h, d, now)
	if h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Remaining") != "0" ||
		h.Get("X-RateLimit-Reset") != "1767265200" {
		t.Fatalf("headers: %v", h)
	}
	if got := h.Get("RateLimit"); got != `"minute";r=7;t=10, "hour";r=0;t=10` {
		t.Fatalf("RateLimit: %s", got)
	}
	if got := RetryAfterSeconds(d, now); got != 10 {
		t.Fatalf("Retry-After %d, want 10", got)
	}
}

// The counters live in a memory stream, which a restarted server no longer
// has: the limiter makes it again and counts the request once, and its
// readiness check does the same when no request came.
func TestCountersSurviveTheirStreamGoing(t *testing.T) {
	url := testenv.StartNATS(t)
	l := newLimiter(t, url, time.Unix(1_800_000_000, 0))
	ctx := context.Background()
	lim := Limits{PerMinute: 10, PerHour: 100}
	if _, err := l.Allow(ctx, "k", lim); err != nil {
		t.Fatal(err)
	}
	if err := l.js.DeleteStream(ctx, Stream); err != nil {
		t.Fatal(err)
	}
	d, err := l.Allow(ctx, "k", lim)
	if err != nil || !d.Allowed || d.Minute.Remaining != 9 {
		t.Fatalf("after the stream went: %+v, %v; want allowed with 9 left (counted once)", d, err)
	}
	if err := l.js.DeleteStream(ctx, Stream); err != nil {
		t.Fatal(err)
	}
	if err := l.Ready(ctx); err != nil {
		t.Fatalf("Ready did not make the stream again: %v", err)
	}
	if _, err := l.js.Stream(ctx, Stream); err != nil {
		t.Fatalf("stream after Ready: %v", err)
	}
}

func TestLocalCountsEachWindowAndForgetsPastOnes(t *testing.T) {
	l := NewLocal()
	lim := Limits{PerMinute: 2, PerHour: 3}
	at := time.Date(2026, 1, 1, 10, 0, 5, 0, time.UTC)
	for i, want := range []bool{true, true, false} {
		if d := l.Allow("k", lim, at); d.Allowed != want {
			t.Fatalf("request %d in the first minute: %+v", i+1, d)
		}
	}
	if d := l.Allow("other", lim, at); !d.Allowed {
		t.Fatal("another key shares no count")
	}
	next := at.Add(time.Minute)
	if d := l.Allow("k", lim, next); !d.Allowed || d.Hour.Remaining != 0 {
		t.Fatalf("a new minute, the hour's third: %+v", d)
	}
	if d := l.Allow("k", lim, next); d.Allowed || d.Minute.Remaining != 0 || d.Hour.Remaining != 0 {
		t.Fatalf("the hour is spent: %+v", d)
	}
	if d := l.Allow("k", lim, at.Add(time.Hour)); !d.Allowed {
		t.Fatalf("a new hour: %+v", d)
	}
}

// A busy key is counted in leases: two replicas admit at most its limit
// (all of it, give or take what a replica holds when its traffic stops),
// and far from the limit a small fraction of the counter writes that
// counting each request would take (two: minute and hour).
func TestLeasesKeepTheLimitWithFewWrites(t *testing.T) {
	url := testenv.StartNATS(t)
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	burst := func(key string, lim Limits, each int) (allowed, writes int64) {
		a, b := newLimiter(t, url, now), newLimiter(t, url, now)
		var n atomic.Int64
		var wg sync.WaitGroup
		for _, l := range []*Limiter{a, b} {
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						d, err := l.Allow(context.Background(), key, lim)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							n.Add(1)
						}
					}
				}()
			}
		}
		wg.Wait()
		return n.Load(), a.claims.Load() + b.claims.Load()
	}
	if allowed, _ := burst("at-the-limit", Limits{PerMinute: 5000, PerHour: 1_000_000}, 750); allowed > 5000 || allowed < 5000-2*maxLease {
		t.Fatalf("allowed %d of 6000 with a limit of 5000", allowed)
	}
	allowed, writes := burst("far-from-it", Limits{PerMinute: 1_000_000, PerHour: 10_000_000}, 1000)
	if allowed != 8000 || writes > 8000/10 {
		t.Fatalf("allowed %d of 8000, in %d counter writes", allowed, writes)
	}
}

// Slots a replica holds and stops using go back to the counter, so the
// other replica sees what was really used.
func TestIdleLeasesGoBack(t *testing.T) {
	url := testenv.StartNATS(t)
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	a, b := newLimiter(t, url, now), newLimiter(t, url, now)
	lim := Limits{PerMinute: 100_000, PerHour: 1_000_000}
	for range 200 {
		if d, err := a.Allow(context.Background(), "k", lim); err != nil || !d.Allowed {
			t.Fatalf("%+v %v", d, err)
		}
	}
	// Each request of b, from a fresh state, claims one slot: the count it
	// is answered with is what a used and still holds, plus b's own.
	heldByA := func(i int64) int64 {
		b.keys.Delete("k")
		d, err := b.Allow(context.Background(), "k", lim)
		if err != nil || !d.Allowed {
			t.Fatalf("%+v %v", d, err)
		}
		return lim.PerMinute - d.Minute.Remaining - 200 - i
	}
	if held := heldByA(1); held <= 0 {
		t.Fatalf("a holds %d slots after 200 quick requests; a lease was expected", held)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := int64(2); heldByA(i) != 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("a still holds %d slots after 10 s idle", heldByA(i+1))
		}
		time.Sleep(50 * time.Millisecond) // polling for a's idle timer
	}
}

// Counters that take a claim and never answer (a stream leader cut off
// mid-publish) fail the claim within claimTimeout, and the requests queued
// behind it do not try again: they are answered ErrUnavailable at once,
// for the caller to count locally, instead of each waiting its turn.
func TestUnansweredClaimDoesNotStallTheKey(t *testing.T) {
	url := testenv.StartNATS(t)
	l, err := New(context.Background(), testenv.JetStreamAt(t, url), 1)
	if err != nil {
		t.Fatal(err)
	}
	js := testenv.JetStreamAt(t, url)
	if err := js.DeleteStream(context.Background(), Stream); err != nil {
		t.Fatal(err)
	}
	// Something takes the counters' subjects and never answers.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe(subjectPrefix+">", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	lim := Limits{PerMinute: 100, PerHour: 1000}
	var wg sync.WaitGroup
	var unavailable atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Allow(context.Background(), "stuck", lim); errors.Is(err, ErrUnavailable) {
				unavailable.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := unavailable.Load(); got != 20 {
		t.Fatalf("%d of 20 requests answered ErrUnavailable", got)
	}
	// One claim (of both windows) went out; the 19 queued behind it did
	// not each wait for the counters again.
	if sent := l.claims.Load(); sent > 2 {
		t.Fatalf("%d counter changes sent for 20 requests while the counters were down", sent)
	}
}

// Far from its limit, a busy key's requests spend slots claimed ahead of
// them (a refill, once half of a lease is spent) instead of sending a
// claim, one in every lease, and waiting a round trip to the counters for
// it: that wait was the gateway's p99. Only the first three claims, while
// the claims grow to a lease worth refilling, are sent by a request.
func TestABusyKeysRequestsDoNotClaimFromTheCounters(t *testing.T) {
	l := newLimiter(t, testenv.StartNATS(t), time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC))
	lim := Limits{PerMinute: 1_000_000, PerHour: 10_000_000}
	const n = 4000
	for range n {
		if d, err := l.Allow(context.Background(), "busy", lim); err != nil || !d.Allowed {
			t.Fatalf("%+v %v", d, err)
		}
	}
	if claimed := l.claimed.Load(); claimed > 3 {
		t.Fatalf("%d of %d requests sent a claim and waited for it (%d counter changes); want the first three only",
			claimed, n, l.claims.Load())
	}
}

// A key no longer seen is forgotten once idle: a replica keeps nothing
// of it (keys made for one CI job each piled up for the life of the
// gateway), and the counters still hold what it spent.
func TestAKeyIdleIsForgottenAndItsCountKept(t *testing.T) {
	url := testenv.StartNATS(t)
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	l := newLimiter(t, url, now)
	lim := Limits{PerMinute: 5, PerHour: 1000}
	ctx := context.Background()
	for i := range 100 {
		if _, err := l.Allow(ctx, "job-key-"+string(rune('a'+i%26))+string(rune('a'+i/26)), lim); err != nil {
			t.Fatal(err)
		}
	}
	for range 7 { // two refused
		if _, err := l.Allow(ctx, "spent", lim); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "every idle key forgotten", func() bool {
		n := 0
		l.keys.Range(func(any, any) bool { n++; return true })
		return n == 0
	})
	d, err := l.Allow(ctx, "spent", lim)
	if err != nil || d.Allowed || d.Hour.Remaining != 995 {
		t.Fatalf("a key forgotten and seen again: %+v %v; want refused, 995 of the hour left", d, err)
	}
}
