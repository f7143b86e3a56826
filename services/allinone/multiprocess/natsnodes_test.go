package multiprocess

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
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// natsNodes is a JetStream cluster of nats-server processes, so a test can
// kill -9 a node as a machine dies. With isolate, the last node runs in a
// network namespace of its own, joined to the host by a veth pair, so a
// test can cut it off the network (a partition) and heal it; the others
// listen on the host end of that link.
type natsNodes struct {
	t        *testing.T
	names    []string
	confs    []string
	hosts    []string // listening address of each node
	clients  []int
	monitors []int
	procs    []*exec.Cmd
	netns    *netns // the last node's namespace; nil when not isolated
}

func startNATSNodes(t *testing.T, n int) *natsNodes { return startNATSCluster(t, n, nil) }

func startNATSCluster(t *testing.T, n int, ns *netns) *natsNodes {
	t.Helper()
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = "127.0.0.1"
		if ns != nil {
			hosts[i] = ns.hostIP
			if i == n-1 {
				hosts[i] = ns.innerIP
			}
		}
	}
	return launchNATSNodes(t, hosts, hosts, ns)
}

// launchNATSNodes starts a node for each of hosts, serving clients (and
// monitoring) on hosts[i] and routes on clusterHosts[i]; with ns, the last
// runs in that network namespace.
func launchNATSNodes(t *testing.T, hosts, clusterHosts []string, ns *netns) *natsNodes {
	t.Helper()
	n := len(hosts)
	nn := &natsNodes{t: t, procs: make([]*exec.Cmd, n), netns: ns, hosts: hosts}
	var routes []string
	// Ports are free on the host; the namespace has none in use. All are
	// taken at once, so no two nodes (or two listeners of one) get the same.
	ports := freePorts(t, 3*n)
	nn.clients, nn.monitors = ports[:n], ports[n:2*n]
	clusterPorts := ports[2*n:]
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://%s:%d", clusterHosts[i], clusterPorts[i]))
	}
	for i := range n {
		name := fmt.Sprintf("node-%d", i+1)
		dir := t.TempDir()
		conf := filepath.Join(dir, "nats.conf")
		// JetStream syncs to disk every 2 minutes by default; a killed
		// process loses nothing the kernel has (the page cache survives
		// it). Pings every 2 s find a route or client cut off by a
		// partition (no reset, just silence) in seconds, not minutes.
		body := fmt.Sprintf("server_name: %s\nlisten: %s:%d\nhttp: %s:%d\nmax_payload: 8MB\nping_interval: \"1s\"\nping_max: 2\n"+
			"jetstream { store_dir: %q }\n"+
			"cluster { name: voiceai-test, listen: %s:%d, routes: [%s] }\n",
			name, nn.hosts[i], nn.clients[i], nn.hosts[i], nn.monitors[i], filepath.Join(dir, "js"),
			clusterHosts[i], clusterPorts[i], strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		nn.names, nn.confs = append(nn.names, name), append(nn.confs, conf)
		nn.start(i)
	}
	t.Cleanup(func() {
		for i := range nn.procs {
			nn.kill(i)
		}
	})
	return nn
}

func (nn *natsNodes) start(i int) {
	nn.t.Helper()
	bin := filepath.Join(binDir, "nats-server")
	cmd := exec.Command(bin, "-c", nn.confs[i])
	if nn.netns != nil && i == len(nn.procs)-1 {
		// ip netns exec execs the server itself: its pid is the server's.
		cmd = exec.Command("ip", "netns", "exec", nn.netns.name, bin, "-c", nn.confs[i])
	}
	// What the node says is shown if the test fails (a node that cannot
	// start says why only there).
	out := &testkit.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	nn.t.Cleanup(func() {
		if nn.t.Failed() {
			nn.t.Logf("--- %s output ---\n%s", nn.names[i], out.String())
		}
	})
	if err := cmd.Start(); err != nil {
		nn.t.Fatal(err)
	}
	nn.procs[i] = cmd
	// A node listens for clients once it has recovered its JetStream
	// store: seconds on a busy machine, for a node restarted after a kill.
	eventually(nn.t, 60*time.Second, nn.names[i]+" listens", func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort(nn.hosts[i], strconv.Itoa(nn.clients[i])))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// kill ends node i at once (SIGKILL), if it runs.
func (nn *natsNodes) kill(i int) {
	if p := nn.procs[i]; p != nil {
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
		nn.procs[i] = nil
	}
}

// index is the position of the node named name.
func (nn *natsNodes) index(name string) int {
	for i, n := range nn.names {
		if n == name {
			return i
		}
	}
	nn.t.Fatalf("no node %q", name)
	return -1
}

func (nn *natsNodes) url(i int) string {
	return fmt.Sprintf("nats://%s:%d", nn.hosts[i], nn.clients[i])
}

func (nn *natsNodes) urls() string {
	var out []string
	for i := range nn.clients {
		out = append(out, nn.url(i))
	}
	return strings.Join(out, ",")
}

// metaLeader is the JetStream meta leader as node i sees it ("" when it
// knows none or does not answer).
func (nn *natsNodes) metaLeader(i int) string {
	var jsz struct {
		Meta struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d/jsz", nn.hosts[i], nn.monitors[i]))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&jsz) != nil {
		return ""
	}
	return jsz.Meta.Leader
}

// streamLeaders are the stream leaders as node i reports them on its
// monitoring endpoint (the JetStream API may be busy or leaderless).
func (nn *natsNodes) streamLeaders(i int) map[string]string {
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
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d/jsz?accounts=true&streams=true", nn.hosts[i], nn.monitors[i]))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&jsz) != nil {
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

// current reports whether node i's JetStream is healthy and caught up
// with its peers (nats-server's /healthz checks every stream and consumer
// it holds).
func (nn *natsNodes) current(i int) bool {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d/healthz", nn.hosts[i], nn.monitors[i]))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// netns is a network namespace joined to the host by a veth pair: a
// host of its own on this machine, which a test can cut off and heal.
type netns struct {
	name, hostLink  string
	hostIP, innerIP string
}

// newNetns makes the namespace, or says why it cannot (not root, no
// iproute2, namespaces not allowed), for the caller to skip visibly.
func newNetns(t *testing.T) (*netns, error) {
	t.Helper()
	id := os.Getpid() % 10000
	n := &netns{
		name: fmt.Sprintf("voiceai-chaos-%d", id), hostLink: fmt.Sprintf("vch%d", id),
		hostIP: fmt.Sprintf("10.%d.%d.1", 200+id%50, id%250), innerIP: fmt.Sprintf("10.%d.%d.2", 200+id%50, id%250),
	}
	if err := makeNetns(t, n.name, veth{n.hostLink, fmt.Sprintf("vcn%d", id), n.hostIP, n.innerIP}); err != nil {
		return nil, err
	}
	return n, nil
}

// veth is a pair joining the host (host end, hostIP) to a namespace
// (inner end, innerIP), each address in one /30.
type veth struct{ host, inner, hostIP, innerIP string }

// makeNetns makes namespace name joined to the host by each of links,
// deleting it when the test ends (and one left over by a killed run
// first), or says why it cannot.
func makeNetns(t *testing.T, name string, links ...veth) error {
	t.Helper()
	_ = exec.Command("ip", "netns", "del", name).Run() // left over by a killed run
	steps := [][]string{{"netns", "add", name}}
	for _, l := range links {
		steps = append(steps,
			[]string{"link", "add", l.host, "type", "veth", "peer", "name", l.inner},
			[]string{"link", "set", l.inner, "netns", name},
			[]string{"addr", "add", l.hostIP + "/30", "dev", l.host},
			[]string{"link", "set", l.host, "up"},
			[]string{"netns", "exec", name, "ip", "addr", "add", l.innerIP + "/30", "dev", l.inner},
			[]string{"netns", "exec", name, "ip", "link", "set", l.inner, "up"})
	}
	steps = append(steps, []string{"netns", "exec", name, "ip", "link", "set", "lo", "up"})
	for i, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			if i > 0 {
				_ = exec.Command("ip", "netns", "del", name).Run()
			}
			return fmt.Errorf("ip %s: %v %s", strings.Join(s, " "), err, out)
		}
	}
	// Deleting the namespace deletes its end of each pair, and so both.
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return nil
}

// cut takes the link down: nothing crosses it, and no connection through
// it is reset (peers find out by silence, as in a real partition).
func (n *netns) cut(t *testing.T) { setLink(t, n.hostLink, "down") }

// heal brings the link back up.
func (n *netns) heal(t *testing.T) { setLink(t, n.hostLink, "up") }

// setLink sets a link "down" or "up".
func setLink(t *testing.T, link, state string) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", link, state).CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s %s: %v %s", link, state, err, out)
	}
}

// freePorts are n distinct ports free on the host, each held until all
// are found.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}
