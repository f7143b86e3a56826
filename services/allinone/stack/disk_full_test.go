package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsadapters "github.com/voiceai-platform/voiceai/services/agents/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/dispatcher"
)

// The disk under the platform's data nearly full: every write is refused
// at once with 503 storage_full and Retry-After, nothing of it written,
// while reads go on; once space is freed, writes are accepted again
// without a restart. (Past the floor, a stream whose write failed for
// want of space would fail every later one until the server restarts.)
func TestWritesAreRefusedWhileTheDiskIsNearlyFullAndResumeOnceFreed(t *testing.T) {
	t.Parallel()
	var free atomic.Uint64
	free.Store(1 << 40)
	s, logs := startLogging(t, slog.LevelInfo, func(c *Config) {
		c.DiskFreeMin, c.DiskFree = 256<<20, func() (uint64, error) { return free.Load(), nil }
	})
	agent := createAgent(t, s, adminKey, `{"name":"Before"}`)
	said := func(what string) func() bool { return func() bool { return strings.Count(logs.String(), what) == 1 } }

	free.Store(100 << 20)
	eventually(t, 10*time.Second, "the hold logged", said("disk nearly full"))
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/v1/convai/agents/create", `{"name":"During"}`},
		{"PATCH", "/v1/convai/agents/" + agent, `{"name":"Renamed"}`},
		{"POST", "/v1/convai/agents/" + agent + "/triage-tickets", `{"title":"During"}`},
		{"POST", "/v1/convai/events", `{"event":"call_started","data":{"agent_id":"` + agent + `"}}`},
		{"DELETE", "/v1/convai/agents/" + agent, ""},
	} {
		r := call(t, s, w.method, w.path, adminKey, w.body, "Idempotency-Key", "full-"+w.method+w.path)
		wantError(t, r, 503, "storage_full")
		if got := r.Header.Get("Retry-After"); got != "30" {
			t.Errorf("%s %s: Retry-After %q; want 30", w.method, w.path, got)
		}
	}
	// Reads go on, and nothing refused was written.
	list := call(t, s, "GET", "/v1/convai/agents", adminKey, "")
	if list.Code != 200 || strings.Count(string(list.Body), `"agent_id"`) != 1 || !strings.Contains(string(list.Body), `"Before"`) {
		t.Fatalf("agents while the disk is full: %d %s", list.Code, list.Body)
	}
	if r := call(t, s, "GET", "/v1/convai/triage-tickets?agent_id="+agent, adminKey, ""); r.Code != 200 || strings.Contains(string(r.Body), "During") {
		t.Fatalf("tickets while the disk is full: %d %s", r.Code, r.Body)
	}

	// The consumers that write hold too: an event stored meanwhile (a
	// call stack's, which does not pass the gateway) is taken by the
	// agents' call log but neither written nor acknowledged until space
	// is freed.
	logged := func(what, durable string) func() bool {
		return func() bool {
			for line := range strings.Lines(logs.String()) {
				if strings.Contains(line, what) && strings.Contains(line, durable) {
					return true
				}
			}
			return false
		}
	}
	js := testenv.JetStreamAt(t, s.NATSURL)
	unacknowledged := func() int {
		c, err := js.Consumer(context.Background(), events.PlatformStream, agentsadapters.CallsDurable)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.NumAckPending + int(info.NumPending)
	}
	publishConversation(t, s, "ws_default", "conversation_started", "conv_while_full", agent, time.Now())
	eventually(t, 10*time.Second, "the call log's consumer holding", logged("consumer holding its work", agentsadapters.CallsDurable))
	if n := unacknowledged(); n != 1 {
		t.Fatalf("%d events unacknowledged by the call log while the disk is full; want the one held", n)
	}
	// So do the webhooks' deliveries, which record each attempt.
	eventually(t, 10*time.Second, "the deliveries holding", logged("consumer holding its work", dispatcher.DeliverDurable))

	free.Store(1 << 40)
	eventually(t, 10*time.Second, "the release logged", said("disk space freed"))
	eventually(t, 10*time.Second, "the call logged once space is freed", func() bool { return unacknowledged() == 0 })
	if !logged("consumer going on", agentsadapters.CallsDurable)() {
		t.Error("the call log's consumer did not say it went on")
	}
	eventually(t, 10*time.Second, "the deliveries going on", logged("consumer going on", dispatcher.DeliverDurable))
	r := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"During"}`, "Idempotency-Key", "full-POST/v1/convai/agents/create")
	if r.Code != 201 {
		t.Fatalf("the write refused while full, sent again once space is freed: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "PATCH", "/v1/convai/agents/"+agent, adminKey, `{"name":"Renamed"}`); r.Code != 200 {
		t.Fatalf("an update once space is freed: %d %s", r.Code, r.Body)
	}
	if n := strings.Count(logs.String(), "disk nearly full"); n != 1 {
		t.Errorf("the hold logged %d times; want once", n)
	}
}

// The disk really fills under a running platform (a tmpfs made smaller
// than what it holds, after the embedded JetStream sized its limit on a
// large one). With the guard, writes are refused before JetStream fails
// one, and resume once the tmpfs is grown; without it, JetStream fails a write
// for want of space and the process says it is not live, for an
// orchestrator to restart it. Needs root (mount); skipped otherwise.
func TestARealDiskFillingUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		floor uint64
	}{{"guarded", 8 << 20}, {"unguarded", 0}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := mountTmpfs(t)
			s := start(t, dir, func(cfg *Config) { administered(cfg, []func(*Config){func(cfg *Config) { cfg.DiskFreeMin = c.floor }}) })
			resize(t, dir, "24m")
			acked, refused := fillWithConversations(t, s)
			switch {
			case c.floor > 0:
				wantError(t, refused, 503, "storage_full")
				if r := call(t, s, "GET", "/healthz", "", ""); r.Code != 200 {
					t.Fatalf("live while writes are held: %d %s", r.Code, r.Body)
				}
				eventually(t, 60*time.Second, "every acknowledged conversation listed", func() bool { return countConversations(t, s) == acked })
				resize(t, dir, "256m")
				eventually(t, 10*time.Second, "writes accepted once the disk grew", func() bool { return ingestLong(s, 1_000_000).Code == 202 })
			default:
				if refused.Code != 503 {
					t.Fatalf("a write with no space left: %d %s; want 503", refused.Code, refused.Body)
				}
				eventually(t, 30*time.Second, "not live once JetStream failed a write", func() bool {
					r := call(t, s, "GET", "/healthz", "", "")
					return r.Code == 503 && strings.Contains(string(r.Body), "jetstream_writes")
				})
				eventually(t, 60*time.Second, "every acknowledged conversation listed", func() bool { return countConversations(t, s) == acked })
			}
			t.Logf("%d conversations acknowledged before the refusal", acked)
		})
	}
}

// mountTmpfs mounts a 1 GiB tmpfs for the test, or skips it.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1g"); err != nil {
		t.Skipf("no tmpfs to fill (mount needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) }) // after the stack has stopped
	return dir
}

func resize(t *testing.T, dir, size string) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_REMOUNT, "size="+size); err != nil {
		t.Fatalf("resize the tmpfs to %s: %v", size, err)
	}
}

// fillWithConversations ingests conversations of 40 turns (about 20 KB)
// from two clients until one is refused, and answers how many were
// acknowledged and the first refusal.
func fillWithConversations(t *testing.T, s *Stack) (acked int, refused response) {
	t.Helper()
	var next, ok atomic.Int64
	var first atomic.Pointer[response]
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first.Load() == nil {
				i := next.Add(1)
				if i > 20_000 {
					return
				}
				if r := ingestLong(s, i); r.Code == 202 {
					ok.Add(1)
				} else {
					first.CompareAndSwap(nil, &r)
				}
			}
		}()
	}
	wg.Wait()
	if first.Load() == nil {
		t.Fatal("20,000 conversations (400 MB) acknowledged on a 24 MiB disk")
	}
	return int(ok.Load()), *first.Load()
}

// ingestLong sends conversation i with a transcript of 40 turns.
func ingestLong(s *Stack, i int64) response {
	turns := make([]map[string]any, 40)
	for n := range turns {
		turns[n] = map[string]any{"role": []string{"user", "agent"}[n%2], "message": fmt.Sprintf("%d %s", n, strings.Repeat("the caller asks about a refund again ", 14)), "time_in_call_secs": n * 3}
	}
	body, _ := json.Marshal(map[string]any{"event": "conversation_ended", "data": map[string]any{
		"conversation_id": fmt.Sprintf("conv_full%024d", i), "agent_id": "agent_01m5vj1jtb9s346q3d25vt4f5v",
		"call_successful": "success", "call_duration_secs": 120, "transcript": turns}})
	req, _ := http.NewRequest("POST", "http://"+s.Addr+"/v1/convai/events", bytes.NewReader(body))
	req.Header.Set("x-api-key", adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{Code: 599, Body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Code: resp.StatusCode, Header: resp.Header, Body: b}
}

// countConversations pages through the conversations listed.
func countConversations(t *testing.T, s *Stack) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		r := call(t, s, "GET", "/v1/convai/conversations?page_size=100"+cursor, adminKey, "")
		var page struct {
			Conversations []json.RawMessage `json:"conversations"`
			HasMore       bool              `json:"has_more"`
			NextCursor    string            `json:"next_cursor"`
		}
		if r.Code != 200 || json.Unmarshal(r.Body, &page) != nil {
			t.Fatalf("conversations: %d %s", r.Code, r.Body)
		}
		n += len(page.Conversations)
		if !page.HasMore {
			return n
		}
		cursor = "&cursor=" + url.QueryEscape(page.NextCursor)
	}
}
