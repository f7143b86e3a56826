package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// floorArg makes this binary the floor process: see serveFloor.
const floorArg = "-serve-floor"

// floorRate is the floor any HTTP front to the event store sits on: a
// bare net/http server, in its own process with its own embedded NATS,
// that answers each POST with one optimistic append and nothing else (no
// auth, no routing, no service hop, no projection). It is driven by the
// same 16 clients as the creates of (a), so (a) can say what share of the
// gap to raw appends is HTTP itself and what is the platform.
func floorRate(n int) (float64, creatingUsage, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, creatingUsage{}, err
	}
	// The floor's data directory is made and removed here: the process
	// is killed, so it never removes anything itself.
	dir, err := os.MkdirTemp("", "voiceai-ticketsbench-floor-")
	if err != nil {
		return 0, creatingUsage{}, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(self, floorArg, dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, creatingUsage{}, err
	}
	if err := cmd.Start(); err != nil {
		return 0, creatingUsage{}, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line := make([]byte, 128)
	k, err := out.Read(line)
	if err != nil {
		return 0, creatingUsage{}, fmt.Errorf("floor process: %w", err)
	}
	addr := strings.TrimSpace(string(line[:k]))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	body := `{"title":"Slow answer","qa_comment":"It took long.","priority":"high"}`
	post := func(i int64) error {
		resp, err := client.Post("http://"+addr+"/t/"+strconv.FormatInt(i, 10), "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("floor process answered %d", resp.StatusCode)
		}
		return nil
	}
	// Warmed up as the platform is (see creates), on tickets of their own.
	if _, err := inParallel(n, func(i int64) error { return post(int64(n) + i) }); err != nil {
		return 0, creatingUsage{}, err
	}
	used := countUsage(cmd.Process.Pid)
	took, err := inParallel(n, post)
	return float64(n) / took.Seconds(), used(n), err
}

// serveFloor runs the floor process on the data directory dir: it prints
// its HTTP address, then serves until killed.
func serveFloor(dir string) error {
	ns, err := server.NewServer(&server.Options{Port: -1, JetStream: true, StoreDir: dir})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("floor: NATS did not start")
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
	if err != nil {
		return err
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{Name: "FLOOR", Subjects: []string{"floor.>"}, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().String())
	payload := make([]byte, 600)
	return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := strings.TrimPrefix(r.URL.Path, "/t/")
		if _, err := js.Publish(r.Context(), "floor."+id, payload, jetstream.WithExpectLastSequencePerSubject(0), jetstream.WithMsgID(id)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"agentqa_ticket_id":"` + id + `"}`))
	}))
}
