package testenv

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartCluster starts n in-process nats-servers as one JetStream cluster
// named name, each on ports of its own; they are shut down when t ends.
// A stream replicated on them elects its leaders as in production, so a
// test can step one down (or shut a server down) under load.
func StartCluster(t testing.TB, name string, n int) []*server.Server {
	t.Helper()
	ports := make([]int, n)
	var routes []*url.URL
	for i := range ports {
		ports[i] = freePort(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	out := make([]*server.Server, n)
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("node-%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: name, Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		}
		ns, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			t.Fatalf("node %d did not start", i+1)
		}
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		out[i] = ns
	}
	return out
}

// freePort is a loopback port free when asked.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
