package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// reportWith is a judge report with one row per test: its labels and
// agreement (agreed of labels), judged by judge-m.
func reportWith(rows ...[3]any) string {
	var js []string
	for _, r := range rows {
		test, labels, agreed := r[0].(string), r[1].(int), r[2].(int)
		b, _ := json.Marshal(map[string]any{"judge_provider": "openai", "judge_model": "judge-m", "test_id": test, "test_name": "T",
			"labels": labels, "agreement": map[string]any{"value": float64(agreed) / float64(labels), "ci95": []float64{0.1, 0.9}, "count": agreed, "n": labels},
			"cohens_kappa": 0.5})
		js = append(js, string(b))
	}
	all := `{"judge_provider":"openai","judge_model":"judge-m","test_id":null,"test_name":null,"labels":1,"agreement":{"value":1,"ci95":[0.2,1],"count":1,"n":1},"cohens_kappa":null}`
	return `{"labels":1,"judges":[` + strings.Join(append([]string{all}, js...), ",") + `]}`
}

func TestMinJudgeAgreement(t *testing.T) {
	args := func(base string, extra ...string) []string {
		return append([]string{"tests", "run", "--agent", "agent_1", "--test", "test_0", "--test", "test_1", "--wait", "--poll", "1ms",
			"--api-key", "k", "--base-url", base}, extra...)
	}
	t.Run("an uncalibrated judge is not gated on", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed", "passed")
		// test_0: 12 labels, 9 agreed (0.75); test_1: none.
		f.on("GET /v1/voiceai/judge/report", reply(200, reportWith([3]any{"test_0", 12, 9})))
		r := run(t, args(base, "--min-judge-agreement", "0.8")...)
		if r.code != 3 { // ExitUngated
			t.Fatalf("exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"Not gating on these results: the judge of 2 test(s) is below --min-judge-agreement 0.80",
			"test_0 (T0), judge judge-m: agreement 0.75 (0.10–0.90) over 12 label(s), below 0.80", "test_1 (T1), judge judge-m: no labels"} {
			if !strings.Contains(r.stderr, want) {
				t.Fatalf("stderr lacks %q: %q", want, r.stderr)
			}
		}
		if !strings.Contains(r.stdout, "2 passed, 0 failed of 2 run(s)") {
			t.Fatalf("the summary is still printed: %q", r.stdout)
		}
	})
	t.Run("too few labels", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed", "failed")
		f.on("GET /v1/voiceai/judge/report", reply(200, reportWith([3]any{"test_0", 20, 19}, [3]any{"test_1", 3, 3})))
		r := run(t, args(base, "--min-judge-agreement", "0.8")...)
		if r.code != ExitUngated || !strings.Contains(r.stderr, "test_1 (T1), judge judge-m: 3 label(s), fewer than the 10 needed") || strings.Contains(r.stderr, "test_0 (") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		if r := run(t, args(base, "--min-judge-agreement", "0.8", "--min-judge-labels", "3")...); r.code != ExitFailed {
			t.Fatalf("calibrated judges gate: a failed run exits 1, got %d %q", r.code, r.stderr)
		}
	})
	t.Run("calibrated judges gate as usual", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed", "passed")
		f.on("GET /v1/voiceai/judge/report", reply(200, reportWith([3]any{"test_0", 10, 9}, [3]any{"test_1", 10, 8})))
		if r := run(t, args(base, "--min-judge-agreement", "0.8")...); r.code != ExitOK {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("usage", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed")
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--min-judge-agreement", "0.8")
		if r.code != ExitError || !strings.Contains(r.stderr, "--min-judge-agreement needs --wait") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		if r := run(t, args(base, "--min-judge-agreement", "1.5")...); r.code != ExitError {
			t.Fatalf("agreement above 1: exit %d", r.code)
		}
	})
}

func TestJudgeCommands(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/voiceai/judge/report", reply(200, reportWith([3]any{"test_0", 8, 5})))
	r := runOn(t, base, "judge", "report")
	if r.code != ExitOK || !strings.Contains(r.stdout, "openai/judge-m  (all tests)") || !strings.Contains(r.stdout, "test_0 T") ||
		!strings.Contains(r.stdout, "0.62 (0.10–0.90)") || !strings.Contains(r.stdout, "KAPPA") {
		t.Fatalf("report: %d %q %q", r.code, r.stdout, r.stderr)
	}
	f.on("POST /v1/convai/test-invocations/tinv_1/runs/trun_1_0/labels", reply(201,
		`{"label_id":"rlbl_1","overturned":true,"corrected_result":"failure"}`))
	r = runOn(t, base, "judge", "label", "tinv_1", "trun_1_0", "--wrong", "--note", "no hours", "--criterion", "condition_0=wrong")
	if r.code != ExitOK || !strings.Contains(r.stdout, "the judge was wrong, the right result is failure (label rlbl_1)") {
		t.Fatalf("label: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if body := f.lastJSON(); body["verdict_correct"] != false || body["note"] != "no hours" || len(body["criteria"].([]any)) != 1 {
		t.Fatalf("label body %v", body)
	}
	if r := runOn(t, base, "judge", "label", "tinv_1", "trun_1_0"); r.code != ExitError ||
		!strings.Contains(r.stderr, "--right or --wrong") {
		t.Fatalf("neither: %d %q", r.code, r.stderr)
	}
	f.on("GET /v1/voiceai/judge/review-queue", reply(200, `{"runs":[{"invocation_id":"tinv_1","run_id":"trun_1_0","test_name":"Hours","status":"failed",
	  "reasons":["failed","votes_disagreed"],"condition_result":{"rationale":{"summary":"no hours given"}}}],"has_more":true,"next_cursor":"rq_next"}`))
	r = runOn(t, base, "judge", "queue")
	if r.code != ExitOK || !strings.Contains(r.stdout, "failed,votes_disagreed") || !strings.Contains(r.stdout, "no hours given") ||
		!strings.Contains(r.stderr, "more results: add --cursor rq_next") {
		t.Fatalf("queue: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r = runOn(t, base, "judge", "queue", "--cursor", "rq_next"); r.code != ExitOK {
		t.Fatalf("queue --cursor: %d %q", r.code, r.stderr)
	}
	f.mu.Lock()
	asked := f.requests[len(f.requests)-1].URL.Query().Get("cursor")
	f.mu.Unlock()
	if asked != "rq_next" {
		t.Fatalf("queue --cursor asked for cursor %q", asked)
	}
}

func TestJudgeConversationAndCompareCommands(t *testing.T) {
	f, base := newFake(t)
	f.on("POST /v1/convai/conversations/conv_1/analysis/run", reply(200, `{"conversation_id":"conv_1","analysis_id":"cana_1","stored":true,
	  "analysis":{"call_successful":"failure","evaluation_criteria_results_list":[{"criteria_id":"refund","result":"failure","rationale":"no window given"}]},
	  "model_usage":{"model":"offline-v1"}}`))
	r := runOn(t, base, "judge", "analyse", "conv_1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "conv_1 judged by offline-v1: FAILURE (analysis cana_1)") || !strings.Contains(r.stdout, "no window given") {
		t.Fatalf("analyse: %d %q %q", r.code, r.stdout, r.stderr)
	}

	f.on("POST /v1/voiceai/conversations/conv_1/evaluation/labels", reply(201,
		`{"label_id":"clbl_1","overturned":true,"corrected_result":"success","reviewed":{"judge_model":"offline-v1"}}`))
	r = runOn(t, base, "judge", "label-conversation", "conv_1", "--wrong", "--note", "it did", "--criterion", "refund=wrong")
	if r.code != ExitOK || !strings.Contains(r.stdout, "the judge (offline-v1) was wrong, the right result is success (label clbl_1)") {
		t.Fatalf("label-conversation: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if body := f.lastJSON(); body["verdict_correct"] != false || body["note"] != "it did" || len(body["criteria"].([]any)) != 1 {
		t.Fatalf("label body %v", body)
	}
	if r := runOn(t, base, "judge", "label-conversation", "conv_1", "--right", "--criterion", "refund"); r.code != ExitError ||
		!strings.Contains(r.stderr, "<criterion_id>=right") {
		t.Fatalf("a bad criterion: %d %q", r.code, r.stderr)
	}

	f.on("POST /v1/voiceai/judge/rejudge", reply(200, `{"rejudge_id":"rjdg_1","judge_model":"offline-v1","runs":1,
	  "votes":[{"invocation_id":"tinv_1","run_id":"trun_1_0","test_name":"Hours","result":"success","rationale":"hours given"}]}`))
	r = runOn(t, base, "judge", "rejudge", "--judge-model", "offline-v1", "--invocation", "tinv_1", "--limit", "10")
	if r.code != ExitOK || !strings.Contains(r.stdout, "offline-v1 judged 1 labelled run(s) again (rjdg_1); no run's verdict changed.") ||
		!strings.Contains(r.stdout, "SUCCESS") {
		t.Fatalf("rejudge: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if body := f.lastJSON(); body["judge_model"] != "offline-v1" || body["limit"] != float64(10) || body["filter"].(map[string]any)["invocation_id"] != "tinv_1" {
		t.Fatalf("rejudge body %v", body)
	}
	if r := runOn(t, base, "judge", "rejudge"); r.code != ExitError || !strings.Contains(r.stderr, "--judge-model") {
		t.Fatalf("no model: %d %q", r.code, r.stderr)
	}

	f.on("GET /v1/voiceai/judge/report", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("compare") != "judge-m,offline-v1" {
			t.Errorf("compare query %q", r.URL.RawQuery)
		}
		reply(200, `{"labels":4,"judges":[{"judge_provider":"offline","judge_model":"offline-v1","test_id":null,"agent_id":"agent_1","labels":4,
		  "agreement":{"value":0.5,"ci95":[0.15,0.85],"count":2,"n":4},"cohens_kappa":0}],
		  "compare":{"models":["judge-m","offline-v1"],"runs":4,"judges":[
		    {"judge_model":"judge-m","judged":4,"labels":4,"agreement":{"value":0.5,"ci95":[0.15,0.85],"count":2,"n":4},"cohens_kappa":0},
		    {"judge_model":"offline-v1","judged":4,"labels":4,"agreement":{"value":1,"ci95":[0.51,1],"count":4,"n":4},"cohens_kappa":1}]}}`)(w, r)
	})
	r = runOn(t, base, "judge", "report", "--compare", "judge-m,offline-v1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "conversations of agent_1") || !strings.Contains(r.stdout, "Compared on the same 4 labelled run(s) (judge-m, offline-v1)") ||
		!strings.Contains(r.stdout, "1.00 (0.51–1.00)") {
		t.Fatalf("report --compare: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
