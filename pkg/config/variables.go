package config

import (
	"slices"
	"strings"
)

// Variables is every VOICEAI_* variable a binary of this repository
// reads (its configuration's env tags, and the few read by hand), sorted:
// deploy/check holds it to the source, both ways.
var Variables = []string{
	"VOICEAI_AGENT_ENDPOINT_CONCURRENCY",
	"VOICEAI_AGENT_ENDPOINT_IDLE_TIMEOUT",
	"VOICEAI_AGENT_ENDPOINT_MAX_ANSWER_BYTES",
	"VOICEAI_AGENT_ENDPOINT_TIMEOUT",
	"VOICEAI_AGENT_ENV_VARS",
	"VOICEAI_API_KEY",
	"VOICEAI_BASE_URL",
	"VOICEAI_BOOTSTRAP_ADMIN_KEY",
	"VOICEAI_DATA_DIR",
	"VOICEAI_DISK_FREE_MIN_BYTES",
	"VOICEAI_EMBEDDED_NATS_PORT",
	"VOICEAI_EMBEDDED_QA_WORKERS",
	"VOICEAI_EMBEDDED_RUNNERS",
	"VOICEAI_HTTP_ADDR",
	"VOICEAI_JUDGE_API_KEY",
	"VOICEAI_JUDGE_BASE_URL",
	"VOICEAI_JUDGE_EVAL_API_KEY",
	"VOICEAI_JUDGE_EVAL_BASE_URL",
	"VOICEAI_JUDGE_EVAL_MODEL",
	"VOICEAI_JUDGE_MODEL",
	"VOICEAI_JUDGE_PROVIDER",
	"VOICEAI_JUDGE_VOTES",
	"VOICEAI_LLM_AGENT_MODELS",
	"VOICEAI_LLM_API_KEY",
	"VOICEAI_LLM_BASE_URL",
	"VOICEAI_LLM_MODEL",
	"VOICEAI_LLM_PROVIDER",
	"VOICEAI_LLM_STREAM",
	"VOICEAI_LLM_TIMEOUT",
	"VOICEAI_LOG_LEVEL",
	"VOICEAI_MAX_ACTIVE_INVOCATIONS",
	"VOICEAI_MAX_API_KEYS_PER_WORKSPACE",
	"VOICEAI_MAX_BODY_BYTES",
	"VOICEAI_MAX_LOAD_CALLERS",
	"VOICEAI_MAX_MEMBERS_PER_WORKSPACE",
	"VOICEAI_MAX_QUEUED_RUNS",
	"VOICEAI_MAX_SERVICE_ACCOUNTS_PER_WORKSPACE",
	"VOICEAI_METRICS_ADDR",
	"VOICEAI_MODEL_CACHE_TTL",
	"VOICEAI_MONGO_URI",
	"VOICEAI_NATS_PREFER_FIRST",
	"VOICEAI_NATS_URL",
	"VOICEAI_OFFLINE_WORDNET",
	"VOICEAI_OUTBOUND_ALLOW_HOSTS",
	"VOICEAI_QA_ACK_WAIT",
	"VOICEAI_QA_BATCH",
	"VOICEAI_QA_CLUSTERING",
	"VOICEAI_RATE_LIMIT_MAX_PER_HOUR",
	"VOICEAI_RATE_LIMIT_MAX_PER_MINUTE",
	"VOICEAI_RATE_LIMIT_PER_HOUR",
	"VOICEAI_RATE_LIMIT_PER_MINUTE",
	"VOICEAI_READ_INDEX",
	"VOICEAI_RUNNER_ACK_WAIT",
	"VOICEAI_RUNNER_CONCURRENCY",
	"VOICEAI_RUN_RETENTION",
	"VOICEAI_RUN_TIMEOUT",
	"VOICEAI_SECRET_KEY",
	"VOICEAI_SHUTDOWN_DELAY",
	"VOICEAI_STORE_ADDR",
	"VOICEAI_STREAM_REPLICAS",
	"VOICEAI_TEST_DOCKER",
	"VOICEAI_TICKETS_SNAPSHOT_EVERY",
	"VOICEAI_TRUSTED_PROXIES",
	"VOICEAI_UPSTREAM_TIMEOUT",
	"VOICEAI_WEBHOOK_ACK_WAIT",
	"VOICEAI_WEBHOOK_ALLOW_HOSTS",
	"VOICEAI_WEBHOOK_AUTO_DISABLE_AFTER",
	"VOICEAI_WEBHOOK_AUTO_DISABLE_FAILURES",
	"VOICEAI_WEBHOOK_MAX_PER_WORKSPACE",
	"VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE",
	"VOICEAI_WEBHOOK_PER_WORKSPACE",
	"VOICEAI_WEBHOOK_TIMEOUT",
	"VOICEAI_WEBHOOK_WORKERS",
}

// TestHarness is the VOICEAI_* variables only the tests read (make test's
// tiers): set in a developer's shell, they are not mistakes either.
var TestHarness = []string{
	"VOICEAI_ARTIFACTS",
	"VOICEAI_CHAOS_RUNS",
	"VOICEAI_CHAOS_STRICT",
	"VOICEAI_TEST_CLUSTER",
	"VOICEAI_TEST_LOG",
}

// UnknownVariable is a VOICEAI_* variable of the environment that nothing
// reads (a typo, or a setting of an older version), and the known one it
// is most likely meant to be ("" when none is close).
type UnknownVariable struct{ Name, Suggestion string }

// Unknown is the VOICEAI_* variables of environ (os.Environ's form) that
// nothing reads: a setting that silently does nothing, which every binary
// warns of at start.
func Unknown(environ []string) []UnknownVariable {
	var out []UnknownVariable
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "VOICEAI_") || slices.Contains(Variables, name) || slices.Contains(TestHarness, name) {
			continue
		}
		out = append(out, UnknownVariable{Name: name, Suggestion: closest(name)})
	}
	slices.SortFunc(out, func(a, b UnknownVariable) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// closest is the known variable nearest name, within a few edits (a
// letter dropped, two swapped, an underscore missing), or "".
func closest(name string) string {
	best, bestDist := "", 4
	for _, v := range Variables {
		if d := editDistance(name, v); d < bestDist {
			best, bestDist = v, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
