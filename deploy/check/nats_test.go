package check

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestNATSClusterConfig parses deploy/nats/nats-cluster.conf as
// nats-server does and checks the settings the platform relies on.
func TestNATSClusterConfig(t *testing.T) {
	t.Setenv("NATS_SERVER_NAME", "nats-1")
	t.Setenv("NATS_PASSWORD", "from-the-environment")
	o, err := server.ProcessConfigFile(repoPath("deploy", "nats", "nats-cluster.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// Clients log in: a request on a service's subject is trusted.
	if len(o.Users) != 1 || o.Users[0].Username != "voiceai" || o.Users[0].Password != "from-the-environment" || o.NoAuthUser != "" {
		t.Errorf("clients log in as %v (no-auth user %q), want only voiceai with NATS_PASSWORD", o.Users, o.NoAuthUser)
	}
	if o.ServerName != "nats-1" {
		t.Errorf("server_name %q: NATS_SERVER_NAME is not used", o.ServerName)
	}
	if !o.JetStream || o.StoreDir != "/data" {
		t.Errorf("JetStream %v in %q, want on in /data (the volume)", o.JetStream, o.StoreDir)
	}
	if len(o.Routes) != 3 || o.Cluster.Name == "" || o.Cluster.Port != 6222 {
		t.Errorf("cluster %q on %d with routes %v, want three nodes", o.Cluster.Name, o.Cluster.Port, o.Routes)
	}
	if o.MaxPayload != 8<<20 {
		t.Errorf("max_payload %d, want 8 MiB (the embedded server's)", o.MaxPayload)
	}
	if o.SyncInterval != 2*time.Minute {
		t.Errorf("sync_interval %s: the README documents 2m", o.SyncInterval)
	}
	// The cluster tier runs its nodes with the same failure detection.
	tier := readRepoFile(t, "services", "allinone", "internal", "clustertier", "natsnodes.go")
	m := regexp.MustCompile(`ping_interval: \\"(\w+)\\"\\nping_max: (\d+)`).FindStringSubmatch(tier)
	if m == nil {
		t.Fatal("the cluster tier's node configuration has no ping settings")
	}
	if o.PingInterval.String() != m[1] || strconv.Itoa(o.MaxPingsOut) != m[2] {
		t.Errorf("ping_interval %s, ping_max %d here; the cluster tier tests %s and %s", o.PingInterval, o.MaxPingsOut, m[1], m[2])
	}
}
