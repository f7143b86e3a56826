package check

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestComposeStackServes starts docker-compose.yml (the container tier,
// VOICEAI_TEST_DOCKER=1, where a Docker engine with the compose plugin
// answers): every container must become healthy, and the API must answer
// an authenticated request through the gateway.
func TestComposeStackServes(t *testing.T) {
	if os.Getenv("VOICEAI_TEST_DOCKER") == "" {
		t.Skip("the container tier runs with VOICEAI_TEST_DOCKER=1 (make test-docker)")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("no Docker engine answers (%v)", err)
	}
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		t.Skipf("the docker compose plugin is not installed (%v)", err)
	}
	const admin = "sk_compose_check_0123456789abcdef"
	compose := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "docker", append([]string{"compose", "-p", "voiceai-check", "-f", repoPath("docker-compose.yml")}, args...)...)
		cmd.Env = append(cmd.Environ(), append(composeEnv, "VOICEAI_BOOTSTRAP_ADMIN_KEY="+admin)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd
	}
	t.Cleanup(func() { _ = compose(context.Background(), "down", "-v", "--remove-orphans").Run() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := compose(ctx, "up", "-d", "--build", "--wait", "--wait-timeout", "300").Run(); err != nil {
		_ = compose(context.Background(), "ps", "-a").Run()
		_ = compose(context.Background(), "logs", "--tail", "50").Run()
		t.Fatalf("docker compose up --wait: %v", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:8080/v1/convai/agents", nil)
	req.Header.Set("xi-api-key", admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/convai/agents through the gateway: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
}
