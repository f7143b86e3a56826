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

// floorProcess is the floor any HTTP front to the event store sits on: a
// bare net/http server, in its own process with its own embedded NATS,
// that answers each POST with one optimistic append and nothing else (no
// auth, no routing, no service hop, no projection). It is driven by the
// same 16 clients as the creates of (a), so (a) can say what share of the
// gap to raw appends is HTTP itself and what is the platform.
type floorProcess struct {
	cmd    *exec.Cmd
	dir    string
	addr   string
	client *http.Client
}

// startFloor starts the floor process on a data directory of its own.
func startFloor() (*floorProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// The floor's data directory is made here and removed by stop: the
	// process is killed, so it never removes anything itself.
	dir, err := os.MkdirTemp("", "voiceai-ticketsbench-floor-")
	if err != nil {
		return nil, err
	}
	f := &floorProcess{cmd: exec.Command(self, floorArg, dir), dir: dir,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}}
	f.cmd.Stderr = os.Stderr
	out, err := f.cmd.StdoutPipe()
	if err == nil {
		err = f.cmd.Start()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	line := make([]byte, 128)
	k, err := out.Read(line)
	if err != nil {
		f.stop()
		return nil, fmt.Errorf("floor process: %w", err)
	}
	f.addr = strings.TrimSpace(string(line[:k]))
	return f, nil
}

func (f *floorProcess) stop() {
	_ = f.cmd.Process.Kill()
	_ = f.cmd.Wait()
	os.RemoveAll(f.dir)
}

// rate creates n tickets on the floor, numbered from first+1 (a number is
// created once), and says how fast, and what the floor and the clients
// used for them.
func (f *floorProcess) rate(first int64, n int) (float64, creatingUsage, error) {
	body := `{"title":"Slow answer","qa_comment":"It took long.","priority":"high"}`
	post := func(i int64) error {
		resp, err := f.client.Post("http://"+f.addr+"/t/"+strconv.FormatInt(first+i, 10), "application/json", strings.NewReader(body))
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
	used := countUsage(f.cmd.Process.Pid)
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
