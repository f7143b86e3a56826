package clustertier

// Binaries are the packages the tier runs, from the repository's root:
// the service commands, the NATS server itself (nodes a test can kill
// -9) and the all-in-one binary.
var Binaries = []string{
	"./services/gateway/cmd/gateway", "./services/identity/cmd/identity", "./services/agents/cmd/agents",
	"./services/tickets/cmd/tickets", "./services/tickets/cmd/tickets-qa-worker",
	"./services/testing/cmd/testing", "./services/testing/cmd/testing-runner",
	"./services/webhooks/cmd/webhooks", "./services/webhooks/cmd/webhook-dispatcher",
	"github.com/nats-io/nats-server/v2", "./services/allinone",
}

// ServiceEnv is what every service process of the tier is given: where
// NATS and the store are, its data directory, the deployment secret, the
// admin key to bootstrap, a listening address of the system's choosing
// (a process logs the one it got), and no internal endpoint
// unless the caller asks for one after.
func ServiceEnv(natsURLs, mongoURI, dataDir, adminKey string) []string {
	return []string{
		"VOICEAI_NATS_URL=" + natsURLs, "VOICEAI_MONGO_URI=" + mongoURI, "VOICEAI_METRICS_ADDR=off",
		"VOICEAI_DATA_DIR=" + dataDir, "VOICEAI_SECRET_KEY=multiprocess-secret-0123456789abcdef", "VOICEAI_HTTP_ADDR=127.0.0.1:0",
		"VOICEAI_BOOTSTRAP_ADMIN_KEY=" + adminKey,
	}
}
