// Package multiprocess runs the services as separate binaries on loopback
// (identity, agents, two gateways) against one NATS and one store, the way
// a split deployment runs, and checks what only holds across processes.
package multiprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/child"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/clustertier"
)

var binDir string

// TestMain builds the binaries once for the package: the service
// commands, the NATS server itself (cluster nodes a test can kill -9) and
// the all-in-one binary; one go command shares its work between them. The
// store is testenv's, a process of its own too.
func TestMain(m *testing.M) {
	dir, err := testenv.Binaries(clustertier.Binaries...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "build the binaries: %v\n", err)
		os.Exit(1)
	}
	binDir = dir
	os.Exit(m.Run())
}

const adminKey = "vak_multiprocess_admin_key_0123456789"

// proc is one running service binary.
type proc struct {
	*child.Proc
	name    string
	addr    chan string // the gateway's listening address
	metrics chan string // the internal endpoint's address (/metrics, /healthz, /readyz)
	// ended is set when the test stops or kills the process: its exit is
	// then expected. told is set once its death has been reported.
	ended atomic.Bool
	told  atomic.Bool
}

// cluster is the shared infrastructure of one test.
type cluster struct {
	t        *testing.T
	nats     *server.Server
	natsURL  string
	mongoURI string
	dataDir  string
	started  []string // the processes started, by name
}

// serviceProbes are a cheap read each service answers once it serves.
var serviceProbes = map[string]string{
	"agents":   "/v1/convai/agents?page_size=1",
	"tickets":  "/v1/convai/triage-tickets?page_size=1",
	"testing":  "/v1/convai/agent-testing?page_size=1",
	"webhooks": "/v1/convai/webhooks",
}

func newCluster(t *testing.T) *cluster {
	ns := testenv.StartNATSServer(t)
	return &cluster{t: t, nats: ns, natsURL: ns.ClientURL(), mongoURI: testenv.StartMongo(t), dataDir: t.TempDir()}
}

// start runs a binary with the cluster's settings plus env, stopping it
// (SIGTERM, then SIGKILL) when the test ends; its logs are shown on failure.
func (c *cluster) start(name string, env ...string) *proc {
	t := c.t
	t.Helper()
	p := &proc{name: name, addr: make(chan string, 1), metrics: make(chan string, 1)}
	c.started = append(c.started, name)
	cmd := exec.Command(filepath.Join(binDir, name))
	cmd.Env = append(append(os.Environ(), clustertier.ServiceEnv(c.natsURL, c.mongoURI, c.dataDir, adminKey)...), env...)
	cp, err := child.Start(cmd, p.watch)
	if err != nil {
		t.Fatal(err)
	}
	p.Proc = cp
	t.Cleanup(func() {
		// A service process never exits by itself: it reconnects, waits
		// for its streams, or rebuilds itself on new connections.
		if msg, died := p.death(); died {
			errorf(t, "a process died: %s", msg)
		}
		p.stop()
		if t.Failed() {
			t.Logf("--- %s logs ---\n%s", p.name, p.Logs())
		}
	})
	return p
}

// watch reads a line of the process's log for the addresses it reports
// once it listens.
func (p *proc) watch(line []byte) {
	var entry struct {
		Msg         string `json:"msg"`
		Addr        string `json:"addr"`
		MetricsAddr string `json:"metrics_addr"`
	}
	if json.Unmarshal(line, &entry) != nil {
		return
	}
	if entry.Msg == "listening" && entry.Addr != "" {
		select {
		case p.addr <- entry.Addr:
		default:
		}
	}
	if entry.MetricsAddr != "" {
		select {
		case p.metrics <- entry.MetricsAddr:
		default:
		}
	}
}

// death reports, the first time it is asked, that the process has exited
// without the test stopping or killing it (a crash, or an exit it chose),
// with its status and the end of its logs.
func (p *proc) death() (string, bool) {
	select {
	case <-p.Done():
	default:
		return "", false
	}
	if p.ended.Load() || p.told.Swap(true) {
		return "", false
	}
	tail := p.Logs()
	if i := len(tail) - 2000; i > 0 {
		tail = "…" + tail[i:]
	}
	at, status := p.Exit()
	return fmt.Sprintf("%s (pid %d) exited by itself at %s (%s); the end of its logs:\n%s",
		p.name, p.Cmd.Process.Pid, at.Format("15:04:05.000"), status, tail), true
}

// end marks the process as ended by the test, unless it has exited by
// itself already (its death is still seen after the test stops it).
func (p *proc) end() {
	select {
	case <-p.Done():
	default:
		p.ended.Store(true)
	}
}

// stop ends the process gracefully, or kills it after a deadline.
func (p *proc) stop() {
	p.end()
	p.Stop(syscall.SIGTERM, 10*time.Second)
}

// kill ends the process abruptly, as a crash would.
func (p *proc) kill() {
	p.end()
	p.Kill()
}

// gateway starts a gateway process and returns its base URL once ready.
func (c *cluster) gateway(env ...string) string {
	c.t.Helper()
	_, base := c.gatewayProc(env...)
	return base
}

// gatewayProc is gateway, returning the process too.
func (c *cluster) gatewayProc(env ...string) (*proc, string) {
	c.t.Helper()
	p := c.start("gateway", env...)
	var addr string
	select {
	case addr = <-p.addr:
	case <-p.Done():
		c.t.Fatalf("gateway exited: %s", p.Logs())
	case <-time.After(60 * time.Second):
		c.t.Fatal("gateway did not report its address")
	}
	base := "http://" + addr
	eventually(c.t, 30*time.Second, "gateway ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	// Processes start in any order: the identity service may bootstrap
	// the admin key just after this gateway has loaded the keys.
	eventually(c.t, 30*time.Second, "gateway accepts the admin key", func() bool {
		return do(c.t, "GET", base+"/v1/service-accounts", adminKey, "").code == 200
	})
	// And every service started before it serves (a process reports its
	// endpoints before its read models are ready), so a test's first
	// request is not a 503.
	for _, name := range c.started {
		if probe, ok := serviceProbes[name]; ok {
			eventually(c.t, 60*time.Second, name+" serves through the gateway", func() bool {
				return do(c.t, "GET", base+probe, adminKey, "").code == 200
			})
		}
	}
	return p, base
}

type result struct {
	code   int
	header http.Header
	body   []byte
}

// do sends one request, with key as its x-api-key unless empty and
// headers as name, value pairs; a transport error fails the test and
// answers code 0.
func do(t *testing.T, method, url, key, body string, headers ...string) result {
	t.Helper()
	req, err := testkit.APIRequest(context.Background(), method, url, key, body, headers...)
	if err != nil {
		t.Error(err)
		return result{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{code: resp.StatusCode, header: resp.Header, body: b}
}

// createAgent creates an agent through the gateway gw from body, wants
// 201, and answers its id: the start of most tests here.
func createAgent(t *testing.T, gw, body string) string {
	t.Helper()
	r := do(t, "POST", gw+"/v1/convai/agents/create", adminKey, body)
	if r.code != 201 {
		t.Fatalf("create agent: %d %s", r.code, r.body)
	}
	return createdID(t, r, "agent_id")
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			fatalf(t, "not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
