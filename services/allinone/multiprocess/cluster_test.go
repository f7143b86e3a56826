package multiprocess

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// The production shape in small: three NATS nodes, streams at R3, the
// services as their own processes (two tickets replicas) connected to
// every node. Under a steady load of ticket creates, each retried with
// its Idempotency-Key until acknowledged, the node leading the TICKETS
// stream is killed (SIGKILL). Creates go on once a new leader is elected, no
// acknowledged ticket is lost or doubled, and a client meets "retry"
// answers (503, or no answer from the node it was on), never a 500.
func TestClusterLosesTheTicketsLeaderUnderLoad(t *testing.T) {
	nodes := startNATSNodes(t, 3)
	c := &cluster{t: t, natsURL: nodes.urls(), mongoURI: testenv.StartMongo(t), dataDir: t.TempDir()}
	r3 := "VOICEAI_STREAM_REPLICAS=3"
	c.start("identity", r3)
	c.start("agents", r3)
	c.start("tickets", r3)
	c.start("tickets", r3)
	gw := c.gateway(r3, "VOICEAI_RATE_LIMIT_PER_MINUTE=1000000", "VOICEAI_RATE_LIMIT_PER_HOUR=1000000")
	var agent string
	eventually(t, 30*time.Second, "an agent is created", func() bool {
		r := do(t, "POST", gw+"/v1/convai/agents/create", adminKey, `{"name":"Cluster"}`)
		if r.code != http.StatusCreated {
			return false
		}
		agent = createdID(t, r, "agent_id")
		return true
	})

	load := newTicketLoad(t, gw, agent)
	t.Cleanup(func() { load.stop() })
	eventually(t, 60*time.Second, "creates flow", func() bool { return load.acked() >= 30 })

	nc, err := nats.Connect(c.natsURL, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	str, err := js.Stream(ctx, events.TicketsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("TICKETS is not replicated on three nodes: %+v %v", info, err)
	}
	leader := nodes.index(info.Cluster.Leader)
	before := load.acked()
	nodes.kill(leader)
	eventually(t, 60*time.Second, "creates go on without the leader's node", func() bool { return load.acked() >= before+30 })
	window, failures := load.failureWindow()
	nodes.start(leader)

	acked := load.stop()
	checkAcked(t, gw, acked)
	if failures[http.StatusInternalServerError] > 0 {
		t.Errorf("clients met %d answers 500 (failures by code: %v); a store between leaders is a 503", failures[500], failures)
	}
	t.Logf("stream leader %s killed: %d creates acknowledged, none lost or doubled; client-visible error window %s, failed attempts by code %v",
		info.Cluster.Leader, len(acked), window.Round(time.Millisecond), failures)
}
