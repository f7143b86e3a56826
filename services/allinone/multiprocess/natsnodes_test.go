package multiprocess

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// natsNodes is a three-node JetStream cluster of nats-server processes on
// loopback, so a test can kill -9 a node as a machine dies.
type natsNodes struct {
	t       *testing.T
	names   []string
	confs   []string
	clients []int
	procs   []*exec.Cmd
}

func startNATSNodes(t *testing.T, n int) *natsNodes {
	t.Helper()
	nn := &natsNodes{t: t, procs: make([]*exec.Cmd, n)}
	var routes []string
	clusterPorts := make([]int, n)
	for i := range n {
		nn.clients = append(nn.clients, freePort(t))
		clusterPorts[i] = freePort(t)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", clusterPorts[i]))
	}
	for i := range n {
		name := fmt.Sprintf("node-%d", i+1)
		dir := t.TempDir()
		conf := filepath.Join(dir, "nats.conf")
		// JetStream syncs to disk every 2 minutes by default; a killed
		// process loses nothing the kernel has (the page cache survives it).
		body := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:%d\nmax_payload: 8MB\njetstream { store_dir: %q }\n"+
			"cluster { name: voiceai-test, listen: 127.0.0.1:%d, routes: [%s] }\n",
			name, nn.clients[i], filepath.Join(dir, "js"), clusterPorts[i], strings.Join(routes, ", "))
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
	cmd := exec.Command(filepath.Join(binDir, "nats-server"), "-c", nn.confs[i])
	if err := cmd.Start(); err != nil {
		nn.t.Fatal(err)
	}
	nn.procs[i] = cmd
	eventually(nn.t, 10*time.Second, nn.names[i]+" listens", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", nn.clients[i]))
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

func (nn *natsNodes) urls() string {
	var out []string
	for _, p := range nn.clients {
		out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(out, ",")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
