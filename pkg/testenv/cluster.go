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
//
// Every server must be given the others' route ports before any starts
// (a JetStream cluster needs its routes configured), so the ports are
// picked free beforehand, and another process may take one before its
// server binds it: that server never gets ready. The cluster is then
// started again on other ports.
func StartCluster(t testing.TB, name string, n int) []*server.Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		nodes, err := startCluster(t, name, n)
		if err == nil {
			t.Cleanup(func() {
				for _, ns := range nodes {
					ns.Shutdown()
					ns.WaitForShutdown()
				}
			})
			return nodes
		}
		if attempt == 3 {
			t.Fatalf("cluster %s: %v", name, err)
		}
		t.Logf("cluster %s: %v; starting it again on other ports", name, err)
	}
}

// startCluster starts the cluster once, or shuts down what it started.
func startCluster(t testing.TB, name string, n int) ([]*server.Server, error) {
	addrs := make([]string, n)
	var routes []*url.URL
	for i := range addrs {
		addrs[i] = testkit.FreeAddr(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: addrs[i]})
	}
	var out []*server.Server
	stop := func() {
		for _, ns := range out {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("node-%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: name, Host: "127.0.0.1", Port: portOf(t, addrs[i])},
			Routes:  routes,
		}
		ns, err := server.NewServer(o)
		if err != nil {
			stop()
			return nil, err
		}
		out = append(out, ns)
		go ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			stop()
			return nil, fmt.Errorf("node %d did not start (its route port %s taken?)", i+1, addrs[i])
		}
	}
	return out, nil
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
