// Package clustertier runs the production shape on one machine as
// processes: a JetStream cluster of nats-server processes, and each
// service as its own binary with the settings the cluster tier gives it.
// The cluster tier's tests (multiprocess, make test-cluster) and the
// cluster bench (clusterbench) share it, so both run the same cluster.
package clustertier

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// Nodes is a JetStream cluster of nats-server processes, so a test can
// kill -9 a node as a machine dies. With a network namespace, the last
// node runs in it (see LaunchNATS). One node is a plain server (no
// cluster block): the single-node shape, streams at R1.
type Nodes struct {
	Names    []string
	bin      string
	confs    []string
	hosts    []string // listening address of each node
	clients  []int
	monitors []int
	procs    []*exec.Cmd
	outs     []*testkit.LogBuffer // what each node has said, over its restarts
	netns    string               // the last node's namespace; "" when not isolated
}

// LaunchNATS starts a node of the nats-server binary bin for each of
// hosts, serving clients (and monitoring) on hosts[i] and routes on
// clusterHosts[i], each with its files under dir; with netns, the last
// runs in that network namespace. It returns once every node listens for
// clients; on an error the nodes started are killed.
func LaunchNATS(bin, dir string, hosts, clusterHosts []string, netns string) (*Nodes, error) {
	n := len(hosts)
	nn := &Nodes{bin: bin, procs: make([]*exec.Cmd, n), hosts: hosts, netns: netns}
	// Ports are free on the host; the namespace has none in use. All are
	// taken at once, so no two nodes (or two listeners of one) get the same.
	ports, err := FreePorts(3 * n)
	if err != nil {
		return nil, err
	}
	nn.clients, nn.monitors = ports[:n], ports[n:2*n]
	clusterPorts := ports[2*n:]
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://%s:%d", clusterHosts[i], clusterPorts[i]))
	}
	for i := range n {
		name := fmt.Sprintf("node-%d", i+1)
		nodeDir := filepath.Join(dir, name)
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return nil, err
		}
		conf := filepath.Join(nodeDir, "nats.conf")
		// JetStream syncs to disk every 2 minutes by default; a killed
		// process loses nothing the kernel has (the page cache survives
		// it). Pings every 2 s find a route or client cut off by a
		// partition (no reset, just silence) in seconds, not minutes.
		body := fmt.Sprintf("server_name: %s\nlisten: %s:%d\nhttp: %s:%d\nmax_payload: 8MB\nping_interval: \"1s\"\nping_max: 2\n"+
			"jetstream { store_dir: %q }\n",
			name, hosts[i], nn.clients[i], hosts[i], nn.monitors[i], filepath.Join(nodeDir, "js"))
		if n > 1 {
			body += fmt.Sprintf("cluster { name: voiceai-test, listen: %s:%d, routes: [%s] }\n",
				clusterHosts[i], clusterPorts[i], strings.Join(routes, ", "))
		}
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, err
		}
		nn.Names, nn.confs = append(nn.Names, name), append(nn.confs, conf)
		nn.outs = append(nn.outs, &testkit.LogBuffer{})
		if err := nn.Start(i); err != nil {
			nn.Close()
			return nil, err
		}
	}
	return nn, nil
}

// Start starts node i and returns once it listens for clients: seconds
// on a busy machine, for a node restarted after a kill that recovers its
// JetStream store first.
func (nn *Nodes) Start(i int) error {
	cmd := exec.Command(nn.bin, "-c", nn.confs[i])
	if nn.netns != "" && i == len(nn.procs)-1 {
		// ip netns exec execs the server itself: its pid is the server's.
		cmd = exec.Command("ip", "netns", "exec", nn.netns, nn.bin, "-c", nn.confs[i])
	}
	cmd.Stdout, cmd.Stderr = nn.outs[i], nn.outs[i]
	if err := cmd.Start(); err != nil {
		return err
	}
	nn.procs[i] = cmd
	addr := net.JoinHostPort(nn.hosts[i], strconv.Itoa(nn.clients[i]))
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not listen on %s after 60s; it said:\n%s", nn.Names[i], addr, nn.outs[i])
		}
	}
}

// Kill ends node i at once (SIGKILL), if it runs.
func (nn *Nodes) Kill(i int) {
	if p := nn.procs[i]; p != nil {
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
		nn.procs[i] = nil
	}
}

// Close kills every node.
func (nn *Nodes) Close() {
	for i := range nn.procs {
		nn.Kill(i)
	}
}

// Proc is node i's process, nil while it is killed.
func (nn *Nodes) Proc(i int) *exec.Cmd { return nn.procs[i] }

// Output is what node i has written, over its restarts.
func (nn *Nodes) Output(i int) string { return nn.outs[i].String() }

// Index is the position of the node named name, or -1.
func (nn *Nodes) Index(name string) int {
	for i, n := range nn.Names {
		if n == name {
			return i
		}
	}
	return -1
}

// URL is node i's client URL.
func (nn *Nodes) URL(i int) string {
	return fmt.Sprintf("nats://%s:%d", nn.hosts[i], nn.clients[i])
}

// URLs are every node's client URL, comma-separated, as VOICEAI_NATS_URL
// takes them.
func (nn *Nodes) URLs() string {
	var out []string
	for i := range nn.clients {
		out = append(out, nn.URL(i))
	}
	return strings.Join(out, ",")
}

// monitor decodes node i's monitoring endpoint path into out, reporting
// whether it answered.
func (nn *Nodes) monitor(i int, path string, out any) bool {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d%s", nn.hosts[i], nn.monitors[i], path))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out) == nil
}

// MetaLeader is the JetStream meta leader as node i sees it ("" when it
// knows none or does not answer).
func (nn *Nodes) MetaLeader(i int) string {
	var jsz struct {
		Meta struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	nn.monitor(i, "/jsz", &jsz)
	return jsz.Meta.Leader
}

// StreamLeaders are the stream leaders as node i reports them on its
// monitoring endpoint (the JetStream API may be busy or leaderless).
func (nn *Nodes) StreamLeaders(i int) map[string]string {
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name    string `json:"name"`
				Cluster struct {
					Leader string `json:"leader"`
				} `json:"cluster"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if !nn.monitor(i, "/jsz?accounts=true&streams=true", &jsz) {
		return nil
	}
	out := map[string]string{}
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			out[s.Name] = s.Cluster.Leader
		}
	}
	return out
}

// ClientNames are the names of node i's client connections.
func (nn *Nodes) ClientNames(i int) []string {
	var connz struct {
		Conns []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d/connz?limit=1000", nn.hosts[i], nn.monitors[i]))
	if err != nil {
		return []string{"(unreachable)"}
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&connz) != nil {
		return []string{"(unreadable)"}
	}
	var out []string
	for _, c := range connz.Conns {
		out = append(out, c.Name)
	}
	return out
}

// Current reports whether node i's JetStream is healthy and caught up
// with its peers (nats-server's /healthz checks every stream and consumer
// it holds).
func (nn *Nodes) Current(i int) bool {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d/healthz", nn.hosts[i], nn.monitors[i]))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// FreePorts are n distinct ports free on the host, each held until all
// are found.
func FreePorts(n int) ([]int, error) {
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
