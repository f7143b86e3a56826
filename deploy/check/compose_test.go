package check

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

const (
	testSecretKey    = "VOICEAI_SECRET_KEY=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	testNATSPassword = "0011223344556677"
)

// composeEnv is what an operator exports before docker compose up.
var composeEnv = []string{testSecretKey, "NATS_PASSWORD=" + testNATSPassword}

func loadCompose(t *testing.T, env ...string) (*types.Project, error) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithName("voiceai"), cli.WithWorkingDirectory(root), cli.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

// TestComposeFileIsTheProductionShape loads docker-compose.yml as docker
// compose does (the Compose specification's schema, interpolation) and
// checks the shape: three NATS nodes and streams at R3, a MongoDB replica
// set initiated by a one-shot service, and services that wait for both,
// report health and restart.
func TestComposeFileIsTheProductionShape(t *testing.T) {
	p, err := loadCompose(t, composeEnv...)
	if err != nil {
		t.Fatal(err)
	}
	svc := p.Services
	infra := map[string]string{
		"nats-1": types.ServiceConditionHealthy, "nats-2": types.ServiceConditionHealthy, "nats-3": types.ServiceConditionHealthy,
		"mongo-init": types.ServiceConditionCompletedSuccessfully,
	}
	for _, name := range []string{"nats-1", "nats-2", "nats-3", "mongo-1", "mongo-2", "mongo-3"} {
		s, ok := svc[name]
		if !ok {
			t.Errorf("no %s", name)
			continue
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 || s.Restart != types.RestartPolicyUnlessStopped {
			t.Errorf("%s: health check %v, restart %q: want both", name, s.HealthCheck, s.Restart)
		}
	}
	if init, ok := svc["mongo-init"]; !ok || init.Restart != types.RestartPolicyOnFailure ||
		!strings.Contains(strings.Join(init.Command, " "), "rs-init.js") {
		t.Errorf("mongo-init: want a one-shot that runs deploy/mongo/rs-init.js and is retried on failure")
	}
	var apps int
	known := configuredVariables(t)
	for name, s := range svc {
		if s.Build == nil {
			continue
		}
		apps++
		service, command := deref(s.Build.Args["SERVICE"]), deref(s.Build.Args["COMMAND"])
		if !commandExists(service, command) {
			t.Errorf("%s: builds services/%s/cmd/%s, which does not exist", name, service, command)
		}
		if s.HealthCheck == nil || strings.Join(s.HealthCheck.Test, " ") != "CMD /service probe" {
			t.Errorf("%s: health check %v, want the binary's own probe", name, s.HealthCheck)
		}
		if s.Restart != types.RestartPolicyUnlessStopped {
			t.Errorf("%s: restart %q", name, s.Restart)
		}
		// The gateway drains for 15 s, a service's requests for 10 s.
		if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) < 20*time.Second {
			t.Errorf("%s: stop_grace_period %v, want at least 20 s (Docker kills at 10 s by default, mid-drain)", name, s.StopGracePeriod)
		}
		for dep, cond := range infra {
			if d, ok := s.DependsOn[dep]; !ok || d.Condition != cond {
				t.Errorf("%s: depends on %s with %q, want %q", name, dep, d.Condition, cond)
			}
		}
		env := s.Environment
		if deref(env["VOICEAI_STREAM_REPLICAS"]) != "3" {
			t.Errorf("%s: VOICEAI_STREAM_REPLICAS %q, want 3", name, deref(env["VOICEAI_STREAM_REPLICAS"]))
		}
		for _, node := range []string{"nats-1", "nats-2", "nats-3"} {
			if !strings.Contains(deref(env["VOICEAI_NATS_URL"]), "nats://voiceai:"+testNATSPassword+"@"+node+":4222") {
				t.Errorf("%s: VOICEAI_NATS_URL %q does not list %s with the voiceai login", name, deref(env["VOICEAI_NATS_URL"]), node)
			}
		}
		if !strings.Contains(deref(env["VOICEAI_MONGO_URI"]), "replicaSet=rs0") {
			t.Errorf("%s: VOICEAI_MONGO_URI %q is not the replica set", name, deref(env["VOICEAI_MONGO_URI"]))
		}
		var names []string
		for k := range env {
			names = append(names, k)
		}
		if unknown := unknownVariables(known, names); len(unknown) > 0 {
			t.Errorf("%s: sets %v, which no binary reads", name, unknown)
		}
	}
	if apps != len(components) {
		t.Errorf("%d services built from the repository, want one per command (%d)", apps, len(components))
	}
	if d := svc["gateway"].DependsOn["identity"]; d.Condition != types.ServiceConditionHealthy {
		t.Errorf("the gateway starts before identity is healthy")
	}
}

func TestComposeFileRefusesAMissingSecretKey(t *testing.T) {
	_, err := loadCompose(t, "NATS_PASSWORD="+testNATSPassword)
	if err == nil || !strings.Contains(err.Error(), "VOICEAI_SECRET_KEY") {
		t.Fatalf("loaded without VOICEAI_SECRET_KEY (%v); want an error naming it", err)
	}
	_, err = loadCompose(t, testSecretKey)
	if err == nil || !strings.Contains(err.Error(), "NATS_PASSWORD") {
		t.Fatalf("loaded without NATS_PASSWORD (%v); want an error naming it", err)
	}
}

// NATS trusts what its logins send (a request's workspace and
// permissions): each node has the password its configuration reads, and
// what Compose publishes of NATS is reachable from this host only.
func TestComposeKeepsNATSOffTheNetwork(t *testing.T) {
	p, err := loadCompose(t, composeEnv...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nats-1", "nats-2", "nats-3"} {
		s := p.Services[name]
		if deref(s.Environment["NATS_PASSWORD"]) != testNATSPassword {
			t.Errorf("%s: NATS_PASSWORD %q, want the operator's", name, deref(s.Environment["NATS_PASSWORD"]))
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q, want 127.0.0.1 only", name, port.Published, port.HostIP)
			}
		}
	}
}

// TestDockerComposeConfig asks docker compose itself, where the plugin is
// installed.
func TestDockerComposeConfig(t *testing.T) {
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		t.Skipf("docker compose is not installed here (%v); the file was checked against the Compose schema above", err)
	}
	cmd := exec.Command("docker", "compose", "-f", repoPath("docker-compose.yml"), "config", "--quiet")
	cmd.Env = append(cmd.Environ(), composeEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker compose config: %v\n%s", err, out)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
