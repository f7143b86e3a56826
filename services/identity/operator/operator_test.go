package operator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/identity/operator"
)

// `workspace create` dials NATS as the services do: started while NATS is
// not reachable yet, it retries until it is, then asks identity.
func TestWorkspaceCreateWaitsForNATS(t *testing.T) {
	// identity's endpoint, answered by the test.
	ns := testenv.StartNATSServer(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe(operator.CreateWorkspaceSubject, func(m *nats.Msg) {
		var in operator.CreateWorkspaceRequest
		_ = json.Unmarshal(m.Data, &in)
		b, _ := json.Marshal(operator.CreateWorkspaceResponse{WorkspaceID: "ws_" + strings.ToLower(in.Name), KeyID: "key_1", APIKey: "secret"})
		_ = m.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The command is given an address where nothing listens yet.
	addr := testkit.FreeAddr(t)

	cmd := operator.WorkspaceCommand(func() (string, error) { return "nats://" + addr, nil })
	var out bytes.Buffer
	var errOut testkit.LogBuffer // read while the command writes it
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"create", "--name", "Acme"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()

	testkit.Eventually(t, operator.DialTimeout, "the command retrying", func() bool {
		return strings.Contains(errOut.String(), "nats not reachable yet")
	})
	proxy(t, addr, strings.TrimPrefix(ns.ClientURL(), "nats://"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("workspace create: %v (stderr: %s)", err, errOut.String())
		}
	case <-time.After(operator.DialTimeout):
		t.Fatal("workspace create did not finish")
	}
	if !strings.Contains(out.String(), `"workspace_id": "ws_acme"`) {
		t.Fatalf("output: %s", out.String())
	}
}

// proxy forwards connections on addr to target until the test ends.
func proxy(t *testing.T, addr, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			go func() { _, _ = io.Copy(u, c) }()
			go func() { _, _ = io.Copy(c, u) }()
		}
	}()
}
