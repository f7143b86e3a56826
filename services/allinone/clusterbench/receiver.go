package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// receiver is the local webhook endpoint: it answers 200 and keeps each
// delivered event's call id once (a redelivery counts once), and counts
// deliveries without a signature.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	seen     map[string]bool
	rounds   int
	last     time.Time     // the last new delivery
	pause    time.Duration // the longest time between two, since watchPauses
	since    int           // deliveries since watchPauses
	after    int           // of which before the longest pause
	unsigned atomic.Int64
}

func newReceiver() *receiver {
	r := &receiver{seen: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.Header.Get("X-Service-Signature") == "" {
			r.unsigned.Add(1)
		}
		var env struct {
			Data struct {
				CallID string `json:"call_id"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &env) == nil && env.Data.CallID != "" {
			now := time.Now()
			r.mu.Lock()
			if !r.seen[env.Data.CallID] {
				r.seen[env.Data.CallID] = true
				if !r.last.IsZero() && now.Sub(r.last) > r.pause {
					r.pause, r.after = now.Sub(r.last), r.since
				}
				r.last = now
				r.since++
			}
			r.mu.Unlock()
		}
	}))
	return r
}

// nextRound is a call id prefix of its own for one replication's events.
func (r *receiver) nextRound() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rounds++
	return "round" + strconv.Itoa(r.rounds) + "-"
}

// watchPauses starts measuring the longest time between two deliveries
// from now.
func (r *receiver) watchPauses() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.pause, r.since, r.after = time.Now(), 0, 0, 0
}

// longestPause is the longest time between two deliveries since
// watchPauses (or between it and the first), and how many came before it.
func (r *receiver) longestPause() (time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pause, r.after
}

// count is how many distinct call ids starting with prefix were delivered.
func (r *receiver) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id := range r.seen {
		if strings.HasPrefix(id, prefix) {
			n++
		}
	}
	return n
}
