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
// nothing in nats.go moves them. Yet it has no JetStream quorum (no meta
// leader, no stream leaders) and no route to the services' other
// replicas: every append and request of its clients waits out a time-out,
// for as long as the partition lasts. The island watch asks the
// connection's server every probeEvery whether JetStream answers (the
// account info request, which only a meta leader serves); after
// islandAfter failed probes it asks the other servers the connection
// knows, each on a short connection of its own, and when one answers it
// moves the connection there (ForceReconnect, the next server chosen by
// ReconnectToServer). A server no other answers for is an election, not
// an island: everyone waits for it alike, and the connection stays.
//
// A connection whose server has never answered is not moved so soon: on a
// cluster still forming, a node whose routes are not up yet cannot reach
// the meta leader that another already reaches, and moving every process
// off it would only add reconnections to a fresh start.
const (
	probeEvery    = time.Second
	probeTimeout  = time.Second
	islandAfter   = 2  // failed probes in a row, about the time a follower notices a lost leader
	unformedAfter = 30 // the same for a server that has not answered yet since the connection was made
)

// errNoQuorum is a server's answer that its JetStream has no meta leader.
var errNoQuorum = errors.New("jetstream has no quorum on this server")

// islandWatch moves a Link's connection off a server that lost its
// cluster, and says so to readiness while it is on one.
type islandWatch struct {
	log   *slog.Logger
	moved func() // counts a move

	mu     sync.Mutex
	island string // the server left behind, while the connection is moving ("": none)
	target string // the server the next reconnection goes to ("": nats.go chooses)
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

// ready is nil unless the connection sits on an island: from the moment
// the watch finds it there until JetStream answers where it moved.
func (w *islandWatch) ready() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.island != "" {
		return fmt.Errorf("on an island: %s has lost its cluster (no JetStream quorum); moving to a server that has one", w.island)
	}
	return nil
}

// run probes nc until ctx ends.
func (w *islandWatch) run(ctx context.Context, nc *nats.Conn) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	failed, answered := 0, false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if nc.IsClosed() {
			return
		}
		if nc.Status() != nats.CONNECTED {
			failed = 0
			continue
		}
		err := probeJetStream(nc)
		if err == nil {
			failed, answered = 0, true
			w.setIsland("")
			continue
		}
		if failed++; failed < islandAfter || (!answered && failed < unformedAfter) {
			continue
		}
		here := nc.ConnectedUrl()
		there := w.servingPeer(nc, here)
		if there == "" {
			continue // no other server answers either: an election, or we are cut off too
		}
		w.log.Warn("nats server has lost its cluster; moving the connection", "from", here, "to", there, "probe", err)
		w.setIsland(here)
		w.mu.Lock()
		w.target = there
		w.mu.Unlock()
		w.moved()
		if err := nc.ForceReconnect(); err != nil {
			return // closed
		}
		// The next probe, a whole round later, is of the new server: not
		// ready until then.
		tick.Reset(probeEvery)
		failed, answered = 0, false
	}
}

func (w *islandWatch) setIsland(url string) {
	w.mu.Lock()
	w.island = url
	w.mu.Unlock()
}

// servingPeer is the first server nc knows, other than here, whose
// JetStream answers; "" when none does.
func (w *islandWatch) servingPeer(nc *nats.Conn, here string) string {
	for _, url := range nc.Servers() {
		if url == here {
			continue
		}
		if err := probeServer(nc.Opts, url); err == nil {
			return url
		}
	}
	return ""
}

// probeServer connects to url alone, with nc's credentials and TLS but
// none of its handlers, and probes its JetStream.
func probeServer(base nats.Options, url string) error {
	o := base
	o.Url, o.Servers = url, nil
	o.Name += "-probe"
	o.AllowReconnect, o.MaxReconnect, o.RetryOnFailedConnect = false, 0, false
	o.Timeout = probeTimeout
	o.ClosedCB, o.DisconnectedCB, o.DisconnectedErrCB, o.ConnectedCB = nil, nil, nil, nil
	o.ReconnectedCB, o.DiscoveredServersCB, o.AsyncErrorCB, o.LameDuckModeHandler = nil, nil, nil, nil
	o.ReconnectErrCB, o.ReconnectToServerCB = nil, nil
	o.InProcessServer = nil
	nc, err := o.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	return probeJetStream(nc)
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
