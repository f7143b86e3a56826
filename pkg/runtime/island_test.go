package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A connection whose server has lost its cluster (alive, answering pings,
// but without a JetStream quorum) moves to a server that has one, and is
// not ready while it sits on the island.
func TestLinkLeavesAnIsland(t *testing.T) {
	cluster := testenv.StartCluster(t, "islandtest", 3)
	elsewhere := testenv.StartNATSServer(t) // a server whose JetStream answers
	island := cluster[0]
	waitForQuorum(t, island.ClientURL())
	// The island first, in order: the link connects there.
	urls := island.ClientURL() + "," + elsewhere.ClientURL()
	reg := prometheus.NewRegistry()
	link, err := DialNATS(context.Background(), "islandtest", urls, quietLog(), reg, nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	if got := link.NC.ConnectedUrl(); got != island.ClientURL() {
		t.Fatalf("connected to %s, want the first server %s", got, island.ClientURL())
	}
	testkit.Eventually(t, 60*time.Second, "ready on a healthy cluster (its server has served)", func() bool { return link.Ready(context.Background()) == nil })

	// Its two peers go: the first server stays up, its clients with it,
	// and has no quorum.
	for _, peer := range cluster[1:] {
		peer.Shutdown()
		peer.WaitForShutdown()
	}
	notReady := false
	testkit.Eventually(t, 60*time.Second, "the link to move off the island", func() bool {
		notReady = notReady || link.Ready(context.Background()) != nil
		return link.NC.ConnectedUrl() == elsewhere.ClientURL() && link.Ready(context.Background()) == nil
	})
	if !notReady {
		t.Error("the link was never reported not ready while on the island")
	}
	if n := eventCount(t, reg, "left_island"); n < 1 {
		t.Errorf("left_island counted %v times", n)
	}
	if err := probeJetStream(link.NC); err != nil {
		t.Fatalf("JetStream where the link moved: %v", err)
	}
}

// An election (every server without a meta leader for a while) is not an
// island: with no other server answering, there is nowhere to move. Nor
// is a healthy cluster: no server serves better than another.
func TestNoServingPeerWhenNoServerAnswers(t *testing.T) {
	cluster := testenv.StartCluster(t, "islandtest", 3)
	nc, err := nats.Connect(cluster[0].ClientURL()+","+cluster[1].ClientURL(), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	w := &islandWatch{log: quietLog(), moved: func() {}}
	healthy := serverView{reach: 3}
	testkit.Eventually(t, 60*time.Second, "JetStream and every route through the cluster", func() bool { return probe(nc, 0) == healthy })
	// What this server was just seen to be, not a second probe of it: one
	// probe of a starved machine may count fewer answers within its
	// window, and the watch acts only on suspect probes in a row.
	if got, wider := w.servingPeer(nc, nc.ConnectedUrl(), healthy); got != "" || wider {
		t.Fatalf("serving peer %q (wider %v) of a healthy cluster: none serves better or reaches more", got, wider)
	}
	noJetStreamHere := serverView{js: errNoQuorum, reach: 3}
	if got, _ := w.servingPeer(nc, nc.ConnectedUrl(), noJetStreamHere); got != cluster[1].ClientURL() {
		t.Fatalf("serving peer when JetStream fails here: %q, want %s", got, cluster[1].ClientURL())
	}
	for _, peer := range cluster[1:] {
		peer.Shutdown()
		peer.WaitForShutdown()
	}
	testkit.Eventually(t, 60*time.Second, "the first server to report no quorum", func() bool { return probeJetStream(nc) != nil })
	if got, wider := w.servingPeer(nc, nc.ConnectedUrl(), probe(nc, 0)); got != "" || wider {
		t.Fatalf("a serving peer %q (wider %v) with every other server down", got, wider)
	}
}

// A server's reach is the servers its routes reach, itself included: what
// falls at once on an island, while a cut-off meta leader still answers
// JetStream as leader.
func TestReachCountsTheServersRouted(t *testing.T) {
	cluster := testenv.StartCluster(t, "islandtest", 3)
	nc, err := nats.Connect(cluster[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testkit.Eventually(t, 60*time.Second, "three servers reached", func() bool { return reach(nc, 0) == 3 })
	// One count may miss answers on a starved machine (its window is
	// short); none may pass the number it stops at.
	testkit.Eventually(t, 60*time.Second, "reach stopping at 2", func() bool {
		got := reach(nc, 2)
		if got > 2 {
			t.Fatalf("reach stopping at 2 counted %d", got)
		}
		return got == 2
	})
	cluster[2].Shutdown()
	cluster[2].WaitForShutdown()
	testkit.Eventually(t, 60*time.Second, "two servers reached", func() bool { return reach(nc, 0) == 2 })
}

// Where to move: only to a server whose JetStream answers, never to one
// that reaches fewer servers, and to one that reaches as many only when
// JetStream fails here.
func TestBetter(t *testing.T) {
	down := errors.New("no answer")
	for _, c := range []struct {
		name       string
		peer, here serverView
		want       bool
	}{
		{"island: the peer reaches more", serverView{reach: 2}, serverView{reach: 1}, true},
		{"a cut-off meta leader seen from the mainland", serverView{reach: 1}, serverView{js: errNoQuorum, reach: 2}, false},
		{"an election here, a peer as wide that serves", serverView{reach: 2}, serverView{js: errNoQuorum, reach: 2}, true},
		{"healthy here and there", serverView{reach: 3}, serverView{reach: 3}, false},
		{"the peer's JetStream fails", serverView{js: down, reach: 3}, serverView{js: down, reach: 1}, false},
		{"no system account: JetStream alone decides", serverView{}, serverView{js: errNoQuorum}, true},
	} {
		if got := better(c.peer, c.here); got != c.want {
			t.Errorf("%s: better(%+v, %+v) = %v, want %v", c.name, c.peer, c.here, got, c.want)
		}
	}
}

// waitForQuorum waits until the server at url has a JetStream meta leader.
func waitForQuorum(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testkit.Eventually(t, 60*time.Second, "a JetStream quorum", func() bool { return probeJetStream(nc) == nil })
}
