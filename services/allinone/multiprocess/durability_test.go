package multiprocess

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/child"
)

// A create the platform has answered is stored: the all-in-one platform
// (embedded NATS and store, what make run starts) is killed with SIGKILL
// at once after the last of a burst of ticket creates is answered, and
// every ticket it answered 201 for is there after a restart on the same
// data. Whatever batching the write path does, nothing is acknowledged
// before it is stored.
func TestAcknowledgedCreatesSurviveKillNine(t *testing.T) {
	data := t.TempDir()
	p, gw := startAllInOne(t, data)
	agent := createAgent(t, gw, `{"name":"durable"}`)

	const clients, each = 16, 25
	var mu sync.Mutex
	var acknowledged []string
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"title":"durable %d-%d","qa_comment":"acknowledged means stored"}`, c, i)
				r := doQuiet("POST", gw+"/v1/convai/agents/"+agent+"/triage-tickets", fmt.Sprintf("durable-%d-%d", c, i), body)
				if r.code != 201 {
					continue // not acknowledged: nothing is promised
				}
				var ticket struct {
					ID string `json:"agentqa_ticket_id"`
				}
				if json.Unmarshal(r.body, &ticket) == nil && ticket.ID != "" {
					mu.Lock()
					acknowledged = append(acknowledged, ticket.ID)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	p.kill() // at once after the last answer
	if len(acknowledged) < clients*each*9/10 {
		t.Fatalf("only %d of %d creates were acknowledged before the kill: the test proves little", len(acknowledged), clients*each)
	}

	_, gw = startAllInOne(t, data)
	var lost []string
	for _, id := range acknowledged {
		var r result
		eventually(t, 30*time.Second, "the tickets service answers for "+id, func() bool {
			r = do(t, "GET", gw+"/v1/convai/triage-tickets/"+id, adminKey, "")
			return r.code != http.StatusServiceUnavailable
		})
		if r.code != 200 {
			lost = append(lost, fmt.Sprintf("%s (%d)", id, r.code))
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged tickets are gone after kill -9 and restart: %v", len(lost), len(acknowledged), lost)
	}
	t.Logf("%d acknowledged tickets, all there after kill -9 and restart", len(acknowledged))
}

// startAllInOne runs the all-in-one binary on data and returns it once
// its gateway serves tickets.
func startAllInOne(t *testing.T, data string) (*proc, string) {
	t.Helper()
	p := &proc{name: "allinone", addr: make(chan string, 1), metrics: make(chan string, 1)}
	cmd := exec.Command(filepath.Join(binDir, "allinone"))
	cmd.Env = append(os.Environ(), "VOICEAI_DATA_DIR="+data, "VOICEAI_HTTP_ADDR=127.0.0.1:0", "VOICEAI_EMBEDDED_NATS_PORT=-1",
		"VOICEAI_METRICS_ADDR=off", "VOICEAI_SECRET_KEY=multiprocess-secret-0123456789abcdef", "VOICEAI_BOOTSTRAP_ADMIN_KEY="+adminKey,
		// the burst is one key's: the rate limit is not what is tested
		"VOICEAI_RATE_LIMIT_PER_MINUTE=1000000", "VOICEAI_RATE_LIMIT_PER_HOUR=1000000")
	// The all-in-one platform says "ready" with its gateway's address.
	cp, err := child.Start(cmd, func(line []byte) {
		var entry struct{ Msg, Addr string }
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "ready" && entry.Addr != "" {
			select {
			case p.addr <- entry.Addr:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Proc = cp
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- allinone logs ---\n%s", p.Logs())
		}
	})
	var addr string
	select {
	case addr = <-p.addr:
	case <-p.Done():
		t.Fatalf("allinone exited: %s", p.Logs())
	case <-time.After(90 * time.Second):
		t.Fatal("allinone did not report its address")
	}
	gw := "http://" + addr
	eventually(t, 90*time.Second, "the platform serves tickets", func() bool {
		return do(t, "GET", gw+"/v1/convai/triage-tickets?page_size=1", adminKey, "").code == 200
	})
	return p, gw
}
