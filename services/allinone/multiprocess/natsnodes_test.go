package multiprocess

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/clustertier"
)

// natsNodes is the tier's JetStream cluster of nats-server processes
// (clustertier.Nodes) for one test, so a test can kill -9 a node as a
// machine dies. With isolate, the last node runs in a network namespace
// of its own, joined to the host by a veth pair, so a test can cut it off
// the network (a partition) and heal it; the others listen on the host
// end of that link.
type natsNodes struct {
	*clustertier.Nodes
	t *testing.T
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
// runs in that network namespace. The nodes are killed when the test ends.
func launchNATSNodes(t *testing.T, hosts, clusterHosts []string, ns *netns) *natsNodes {
	t.Helper()
	netnsName := ""
	if ns != nil {
		netnsName = ns.name
	}
	nodes, err := clustertier.LaunchNATS(filepath.Join(binDir, "nats-server"), t.TempDir(), hosts, clusterHosts, netnsName)
	if err != nil {
		fatalf(t, "%v", err)
	}
	// What a node says is shown if the test fails (a node that cannot
	// start says why only there).
	t.Cleanup(func() {
		nodes.Close()
		if t.Failed() {
			for i, name := range nodes.Names {
				t.Logf("--- %s output ---\n%s", name, nodes.Output(i))
			}
		}
	})
	return &natsNodes{Nodes: nodes, t: t}
}

// start restarts node i, failing the test if it does not listen.
func (nn *natsNodes) start(i int) {
	nn.t.Helper()
	if err := nn.Start(i); err != nil {
		fatalf(nn.t, "%v", err)
	}
}

// index is the position of the node named name.
func (nn *natsNodes) index(name string) int {
	i := nn.Index(name)
	if i < 0 {
		nn.t.Fatalf("no node %q", name)
	}
	return i
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
