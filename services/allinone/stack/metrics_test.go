package stack

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// The workers export their own numbers (runs by outcome, model latency
// and tokens, queue backlog and consumer lag), and every metric the
// shipped alert rules and dashboard use is one the platform exports.
func TestAlertsAndDashboardUseExportedMetrics(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		if req.ResponseFormat != nil { // the judge
			return llmtest.OK(`{"result":"success","rationale":["gives the hours"],"summary":"The agent gives the hours."}`)
		}
		return llmtest.OK("We are open nine to five every weekday.")
	})
	t.Cleanup(model.Close)
	reg := obs.NewRegistry()
	s := run(t, adminConfig(t, func(c *Config) {
		c.Runner.Provider, c.Runner.BaseURL, c.Runner.LLMModel = "openai", model.URL, "test-model"
	}), slog.New(slog.DiscardHandler), reg)

	agent := agentWith(t, s)
	r := call(t, s, "POST", "/v1/convai/agent-testing/create", adminKey, hoursTest)
	test, _ := r.JSON(t)["id"].(string)
	awaitCompleted(t, s, startRuns(t, s, adminKey, agent, 3, test), 30*time.Second)
	if r := call(t, s, "GET", "/v1/convai/agents", "vak_not_a_key_of_anyone_0123456789", ""); r.Code != 401 {
		t.Fatalf("unknown key: %d", r.Code)
	}

	families := map[string]*dto.MetricFamily{}
	eventually(t, 30*time.Second, "the runner counted its runs", func() bool {
		got, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		clear(families)
		for _, f := range got {
			families[f.GetName()] = f
		}
		// A run is counted when its result is stored, its job acked just
		// after: the work queue is empty once the last ack has landed.
		// The QA worker reads failed runs alone: these passed, so it
		// counts none of them (its numbers are there from its start).
		return value(families, "voiceai_runner_runs_total", map[string]string{"outcome": "passed"}) == 3 &&
			value(families, "voiceai_qa_worker_messages_total", map[string]string{"source": "runs", "outcome": "skipped"}) == 0 &&
			families["voiceai_qa_worker_messages_total"] != nil &&
			value(families, "voiceai_stream_messages", map[string]string{"stream": "TESTJOBS"}) == 0
	})
	if n := value(families, "voiceai_model_request_duration_seconds", map[string]string{"model": "test-model", "outcome": "ok"}); n != 6 {
		t.Errorf("model requests timed: %v, want 6 (3 runs, each answered and judged)", n)
	}
	for _, name := range []string{"voiceai_runner_agent_turn_seconds", "voiceai_runner_agent_first_token_seconds"} {
		if n := value(families, name, map[string]string{"provider": "openai", "model": "test-model"}); n != 3 {
			t.Errorf("%s: %v agent turns, want 3", name, n)
		}
	}
	if n := value(families, "voiceai_model_tokens_total", map[string]string{"kind": "prompt"}); n < 0 {
		t.Errorf("tokens: %v", n)
	}
	if n := value(families, "voiceai_stream_messages", map[string]string{"stream": "TESTJOBS"}); n != 0 {
		t.Errorf("TESTJOBS holds %v jobs once every run is done, want 0", n)
	}
	if value(families, "voiceai_consumer_info_up", map[string]string{"consumer": adapters.TranscriptsDurable}) != 1 {
		t.Errorf("consumer lag: %v", families["voiceai_consumer_pending_messages"])
	}

	// Every voiceai_ metric the alerts and the dashboard name is exported.
	_, here, _, _ := runtime.Caller(0)
	deploy := filepath.Join(filepath.Dir(here), "..", "..", "..", "deploy")
	// read decodes a deploy file (YAML, or JSON, which YAML reads too).
	read := func(path string, v any) {
		b, err := os.ReadFile(filepath.Join(deploy, path))
		if err == nil {
			err = yaml.Unmarshal(b, v)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `yaml:"expr"`
			} `yaml:"targets"`
		} `yaml:"panels"`
	}
	read(filepath.Join("prometheus", "alerts.yml"), &rules)
	read(filepath.Join("grafana", "voiceai-dashboard.json"), &dash)
	if len(rules.Groups) == 0 || len(dash.Panels) == 0 {
		t.Fatalf("%d alert groups, %d dashboard panels", len(rules.Groups), len(dash.Panels))
	}
	var exprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Fatalf("a rule without a name or an expression: %+v", r)
			}
			exprs = append(exprs, r.Expr)
		}
	}
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	name := regexp.MustCompile(`voiceai_[a-z_]+`)
	for _, e := range exprs {
		for _, m := range name.FindAllString(e, -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if trimmed, ok := strings.CutSuffix(m, suffix); ok && families[trimmed].GetType() == dto.MetricType_HISTOGRAM {
					base = trimmed
				}
			}
			if families[base] == nil {
				t.Errorf("%s is used by an alert or the dashboard but not exported (expression %q)", m, e)
			}
		}
	}
}

// value sums the samples of a family whose labels include want.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		matches := true
		for k, v := range want {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
				matches = false
			}
		}
		if !matches {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}
