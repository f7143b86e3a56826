package testenv

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// StartCluster starts n in-process nats-servers as one JetStream cluster
// named name, each on ports of its own; they are shut down when t ends.
// A stream replicated on them elects its leaders as in production, so a
// test can step one down (or shut a server down) under load.
func StartCluster(t testing.TB, name string, n int) []*server.Server {
	t.Helper()
	addrs := make([]string, n)
	var routes []*url.URL
	for i := range addrs {
		addrs[i] = testkit.FreeAddr(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: addrs[i]})
	}
	out := make([]*server.Server, n)
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("node-%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: name, Host: "127.0.0.1", Port: portOf(t, addrs[i])},
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

// portOf is the port of a host:port address.
func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
