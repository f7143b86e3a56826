package stack

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/runtime"
)

// Everything written survives a restart of the all-in-one process, and
// the bootstrap key is generated exactly once.
func TestDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, nil)
	if s.AdminKey == "" {
		t.Fatal("first start generated no admin key")
	}
	keyFile := filepath.Join(dir, "admin.key")
	fileBefore, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin.key mode %v, want 0600", fi.Mode().Perm())
	}
	admin := s.AdminKey
	var ids []string
	for _, name := range []string{"one", "two", "three"} {
		ids = append(ids, createAgent(t, s, admin, `{"name":"`+name+`","system_prompt":"p"}`))
	}
	if r := call(t, s, "PATCH", "/v1/convai/agents/"+ids[0], admin, `{"name":"one renamed","tags":["x"]}`); r.Code != 200 {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "DELETE", "/v1/convai/agents/"+ids[2], admin, ""); r.Code != 204 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	userKey, _, _ := newKey(t, s, admin, `["convai_read"]`, "")
	before := map[string][]byte{}
	for _, id := range ids[:2] {
		before[id] = call(t, s, "GET", "/v1/convai/agents/"+id, admin, "").Body
	}
	listBefore := call(t, s, "GET", "/v1/convai/agents", admin, "").Body
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := start(t, dir, nil)
	if s2.AdminKey != "" {
		t.Fatal("a restart generated another admin key")
	}
	if fileAfter, _ := os.ReadFile(keyFile); !bytes.Equal(fileBefore, fileAfter) {
		t.Fatal("admin.key changed on restart")
	}
	for id, b := range before {
		if r := call(t, s2, "GET", "/v1/convai/agents/"+id, admin, ""); r.Code != 200 || !bytes.Equal(r.Body, b) {
			t.Fatalf("agent %s after restart: %d\n got %s\nwant %s", id, r.Code, r.Body, b)
		}
	}
	wantError(t, call(t, s2, "GET", "/v1/convai/agents/"+ids[2], admin, ""), 404, "agent_not_found")
	if r := call(t, s2, "GET", "/v1/convai/agents", admin, ""); !bytes.Equal(r.Body, listBefore) {
		t.Fatalf("listing after restart:\n got %s\nwant %s", r.Body, listBefore)
	}
	if r := call(t, s2, "GET", "/v1/convai/agents", userKey, ""); r.Code != 200 {
		t.Fatalf("a key created before the restart: %d", r.Code)
	}
}

// VOICEAI_BOOTSTRAP_ADMIN_KEY is idempotent across restarts, and a new
// value replaces the old one.
func TestConfiguredBootstrapKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const first, second = "vak_first_configured_admin_key_0001", "vak_second_configured_admin_key_002"
	s := start(t, dir, func(c *Config) { c.BootstrapAdminKey = first })
	if s.AdminKey != "" {
		t.Fatal("a configured key must not be generated or printed")
	}
	if _, err := os.Stat(filepath.Join(dir, "admin.key")); !os.IsNotExist(err) {
		t.Fatal("admin.key written although the key is configured")
	}
	_ = s.Close()
	s = start(t, dir, func(c *Config) { c.BootstrapAdminKey = first })
	r := call(t, s, "GET", "/v1/service-accounts/sa_admin/api-keys", first, "")
	if r.Code != 200 || bytes.Count(r.Body, []byte(`"key_id"`)) != 1 {
		t.Fatalf("after a restart with the same value: %d %s", r.Code, r.Body)
	}
	_ = s.Close()
	s = start(t, dir, func(c *Config) { c.BootstrapAdminKey = second })
	if r := call(t, s, "GET", "/v1/convai/agents", second, ""); r.Code != 200 {
		t.Fatalf("new configured key: %d", r.Code)
	}
	wantError(t, call(t, s, "GET", "/v1/convai/agents", first, ""), 401, "api_key_revoked")
}

// A connection nats.go gives up for good (here: a control line past the
// server's limit, as a 5,000-byte id in a subject once made) stops the
// stack with runtime.ErrConnectionLost instead of leaving a process that
// answers 503 forever; `make run` then starts it again on the same data.
func TestStackStopsWhenItsConnectionIsLostAndStartsAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, func(c *Config) { c.BootstrapAdminKey = adminKey })
	agent := newAgent(t, s, adminKey, "Kept")
	_ = s.link.NC.Publish(strings.Repeat("x", 5000), nil)
	_ = s.link.NC.Flush()
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		if !errors.Is(err, runtime.ErrConnectionLost) {
			t.Fatalf("the stack stopped with %v, want ErrConnectionLost", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stack kept running on a connection lost for good")
	}
	again := start(t, dir, func(c *Config) { c.BootstrapAdminKey = adminKey })
	if r := call(t, again, "GET", "/v1/convai/agents/"+agent, adminKey, ""); r.Code != 200 {
		t.Fatalf("after the restart: %d %s", r.Code, r.Body)
	}
}
