package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Islands. A NATS server cut off from its cluster but not dead keeps its
// clients: their connections stay up and its pings are answered, so
// nothing in nats.go moves them. Yet it has no route to the services'
// other replicas, and soon no JetStream quorum: every append and request
// of its clients waits out a time-out, for as long as the partition lasts.
//
// The island watch asks the connection's server two things every
// probeEvery: does JetStream answer (the account info request, which only
// a meta leader serves), and how many servers does it reach (its reach:
// the servers that answer an account STATZ ping through it, itself
// included). A server is suspect when JetStream fails or its reach fell
// below the most the watch has seen. After islandAfter suspect probes in a
// row the watch asks the other servers the connection knows, each on a
// short connection of its own, and moves the connection (ForceReconnect,
// the next server chosen by ReconnectToServer) to the first whose
// JetStream answers and that reaches more servers, or as many when
// JetStream failed here.
//
// Reach is what makes the move fast and safe. A cut-off meta leader still
// answers JetStream as leader for 10 to 20 s, until it notices it lost its
// quorum; its reach falls at once. And a server that reaches fewer servers
// than this one is never a destination, even while an election on this
// side makes JetStream fail here. A server no other out-reaches is an
// election or a lost node, not an island: everyone waits for it alike, and
// the connection stays (the reach it sees becomes the most seen).
//
// A connection whose server has never answered is not moved so soon: on a
// cluster still forming, a node whose routes are not up yet cannot reach
// the meta leader that another already reaches, and moving every process
// off it would only add reconnections to a fresh start.
const (
	probeEvery   = time.Second
	probeTimeout = time.Second
	reachTimeout = 500 * time.Millisecond // the wait for the last servers' STATZ answers
	// maxReachAnswers bounds the STATZ answers a probe counts: one a
	// server, far above any cluster's size (NATS clusters are a few
	// nodes; superclusters answer through their gateways).
	maxReachAnswers = 1024
	islandAfter     = 2  // suspect probes in a row before the peers are asked
	unformedAfter   = 30 // the same for a server that has not answered yet since the connection was made
)

// errNoQuorum is a server's answer that its JetStream has no meta leader.
var errNoQuorum = errors.New("jetstream has no quorum on this server")

// islandWatch moves a Link's connection off a server that lost its
// cluster, and says so to readiness while it is on one.
type islandWatch struct {
	log   *slog.Logger
	moved func() // counts a move

	mu       sync.Mutex
	answered bool   // the connection's server has served since the connection was made or moved
	island   string // the server left behind, while the connection is moving ("": none)
	target   string // the server the next reconnection goes to ("": nats.go chooses)
}

// chooseServer is the connection's ReconnectToServer: the server the watch
// found serving, once; otherwise nats.go's own choice.
func (w *islandWatch) chooseServer(servers []nats.Server, _ nats.ServerInfo) (*nats.Server, time.Duration) {
	w.mu.Lock()
	target := w.target
	w.target = "" // once: a failed attempt falls back to the pool's order
	w.mu.Unlock()
	for i := range servers {
		if target != "" && servers[i].URL != nil && servers[i].URL.String() == target {
			return &servers[i], 0
		}
	}
	return nil, 0
}

// ready is nil once the connection's server has served (JetStream
// answered, as many servers reached as ever) and unless the connection
// sits on an island: from the moment the watch finds it there until
// JetStream answers where it moved.
func (w *islandWatch) ready() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.island != "":
		return fmt.Errorf("on an island: %s has lost its cluster (no JetStream quorum, or fewer servers reached than elsewhere); moving to a server that has one", w.island)
	case !w.answered:
		return errors.New("nats server has not served JetStream yet on this connection")
	}
	return nil
}

// serverView is what one probe of a server found.
type serverView struct {
	js    error // nil: JetStream answered
	reach int   // servers that answered the STATZ ping through it
}

// run probes nc until ctx ends, the first time at once.
func (w *islandWatch) run(ctx context.Context, nc *nats.Conn) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	suspect, answered, mostReach := 0, false, 0
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		if nc.IsClosed() {
			return
		}
		if nc.Status() != nats.CONNECTED {
			suspect = 0
			continue
		}
		// Counting stops once every server known answered: at once on a
		// healthy cluster, reachTimeout where some do not.
		here := probe(nc, max(mostReach, len(nc.Servers())))
		mostReach = max(mostReach, here.reach)
		if here.js == nil && here.reach >= mostReach {
			suspect, answered = 0, true
			w.served()
			continue
		}
		if suspect++; suspect < islandAfter || (!answered && suspect < unformedAfter) {
			continue
		}
		url := nc.ConnectedUrl()
		there, wider := w.servingPeer(nc, url, here)
		if there == "" {
			if !wider {
				// No server reaches more than this one: an election, or
				// a node lost for everyone. What it reaches is the
				// cluster now.
				mostReach = here.reach
			}
			// Else a wider side is electing: ask again next round.
			continue
		}
		w.log.Warn("nats server has lost its cluster; moving the connection", "from", url, "to", there,
			"jetstream", errString(here.js), "reach", here.reach, "most_reach", mostReach)
		w.leave(url, there)
		w.moved()
		if err := nc.ForceReconnect(); err != nil {
			return // closed
		}
		// The next probe, a whole round later, is of the new server: not
		// ready until then. Its reach is learnt afresh.
		tick.Reset(probeEvery)
		suspect, answered, mostReach = 0, false, 0
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// served records that the connection's server served: ready.
func (w *islandWatch) served() {
	w.mu.Lock()
	w.answered, w.island = true, ""
	w.mu.Unlock()
}

// leave records that the connection leaves island for there: not ready
// until there has served.
func (w *islandWatch) leave(island, there string) {
	w.mu.Lock()
	w.answered, w.island, w.target = false, island, there
	w.mu.Unlock()
}

// servingPeer is the first server nc knows, other than url, that serves
// better than here saw: its JetStream answers, and it reaches more servers
// (or as many, when JetStream failed here). "" when none does; wider then
// says whether one reaches more servers all the same (its side of a
// partition is still electing).
func (w *islandWatch) servingPeer(nc *nats.Conn, url string, here serverView) (there string, wider bool) {
	for _, peer := range nc.Servers() {
		if peer == url {
			continue
		}
		v := probeServer(nc.Opts, peer, here.reach+1)
		if better(v, here) {
			return peer, true
		}
		wider = wider || v.reach > here.reach
	}
	return "", wider
}

// better reports whether a peer's view makes it a place to move to from
// here.
func better(peer, here serverView) bool {
	if peer.js != nil || peer.reach < here.reach {
		return false
	}
	return here.js != nil || peer.reach > here.reach
}

// probeServer connects to url alone, with base's credentials and TLS but
// none of its handlers, and probes it.
func probeServer(base nats.Options, url string, enough int) serverView {
	o := base
	o.Url, o.Servers = url, nil
	o.Name += "-probe"
	o.AllowReconnect, o.MaxReconnect, o.RetryOnFailedConnect = false, 0, false
	o.Timeout = probeTimeout
	o.ClosedCB, o.DisconnectedCB, o.DisconnectedErrCB, o.ConnectedCB = nil, nil, nil, nil
	o.ReconnectedCB, o.DiscoveredServersCB, o.AsyncErrorCB, o.LameDuckModeHandler = nil, nil, nil, nil
	o.ReconnectErrCB, o.ReconnectToServerCB = nil, nil
	o.InProcessServer, o.FlusherTimeout = nil, nats.DefaultFlusherTimeout // a socket, which a deadline guards
	nc, err := o.Connect()
	if err != nil {
		return serverView{js: err}
	}
	defer nc.Close()
	return probe(nc, enough)
}

// probe asks nc's server, both at once, whether JetStream answers and how
// many servers it reaches; it stops counting at enough (0: waits out
// reachTimeout).
func probe(nc *nats.Conn, enough int) serverView {
	reached := make(chan int, 1)
	go func() { reached <- reach(nc, enough) }()
	js := probeJetStream(nc)
	return serverView{js: js, reach: <-reached}
}

// probeJetStream asks nc's server for the account's JetStream info: the
// meta leader answers it, a server that knows it has none answers 10008,
// and one that has not noticed yet answers nothing.
func probeJetStream(nc *nats.Conn) error {
	msg, err := nc.Request("$JS.API.INFO", nil, probeTimeout)
	if err != nil {
		return err
	}
	var resp struct {
		Error *struct {
			Code      int `json:"code"`
			ErrorCode int `json:"err_code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("jetstream info: %w", err)
	}
	if resp.Error != nil && resp.Error.Code == 503 {
		return errNoQuorum
	}
	return nil // JetStream answered (an account without JetStream is not the connection's to fix)
}

// accountPing is answered by every server the request reaches (over the
// routes), for any account, each with its own server id: nats-server
// imports it into every account from the system account.
const accountPing = "$SYS.REQ.ACCOUNT.PING.STATZ"

// reach counts the servers that answer the account STATZ ping through
// nc within reachTimeout, stopping at enough (when above 0). 0 where the
// servers run without a system account (nothing answers).
func reach(nc *nats.Conn, enough int) int {
	inbox := nc.NewInbox()
	// A channel of its own, sized for a cluster's answers: SubscribeSync
	// makes one of the connection's default 65,536 slots (512 KiB), every
	// second, for a handful of messages.
	answers := make(chan *nats.Msg, maxReachAnswers)
	sub, err := nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return 0
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(accountPing, inbox, []byte(`{"include_unused":true}`)); err != nil {
		return 0
	}
	seen := map[string]bool{}
	deadline := time.NewTimer(reachTimeout)
	defer deadline.Stop()
	for enough <= 0 || len(seen) < enough {
		var msg *nats.Msg
		select {
		case msg = <-answers:
		case <-deadline.C:
		}
		if msg == nil {
			break // the deadline: every server that can answer has
		}
		var resp struct {
			Server struct {
				ID string `json:"id"`
			} `json:"server"`
		}
		if json.Unmarshal(msg.Data, &resp) == nil && resp.Server.ID != "" {
			seen[resp.Server.ID] = true
		}
	}
	return len(seen)
}
