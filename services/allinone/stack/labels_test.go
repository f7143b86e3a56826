package stack

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/cli"
)

// People label runs' verdicts through the API: a label changes nothing in
// the run's recorded verdict (its history is kept), the review queue
// lists what is left to review, and the judge report's agreement and κ
// equal a hand computation on the same labels.
func TestLabelsAndJudgeReportThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	passing := runAndWait(t, s, agent, 4, hours)
	dropOpeningHours(t, s, agent)
	failing := runAndWait(t, s, agent, 4, hours)
	runsOf := func(inv, want string) []string {
		var ids []string
		for _, r := range getInvocation(t, s, inv).TestRuns {
			if r.Status != want {
				t.Fatalf("run %s: %s, want %s", r.TestRunID, r.Status, want)
			}
			ids = append(ids, r.TestRunID)
		}
		return ids
	}
	passed, failed := runsOf(passing, "passed"), runsOf(failing, "failed")

	// The queue before any label: every failed run, newest invocation
	// first; with every pass sampled, the passes too.
	type queued struct {
		RunID      string   `json:"run_id"`
		Reasons    []string `json:"reasons"`
		Conditions []string `json:"success_conditions"`
		Label      any      `json:"label"`
	}
	queue := func(query string) []queued {
		t.Helper()
		r := call(t, s, "GET", "/v1/voiceai/judge/review-queue"+query, adminKey, "")
		var q struct{ Runs []queued }
		if err := json.Unmarshal(r.Body, &q); r.Code != 200 || err != nil {
			t.Fatalf("queue: %d %s", r.Code, r.Body)
		}
		return q.Runs
	}
	q := queue("?sample_per_mille=0")
	if len(q) != 4 || q[0].Reasons[0] != "failed" || q[0].Conditions[0] != "The agent states the opening hours nine to five" {
		t.Fatalf("queue of failures: %+v", q)
	}
	all := queue("?sample_per_mille=1000")
	if len(all) != 8 || all[7].Reasons[0] != "sampled_pass" {
		t.Fatalf("every pass sampled: %+v", all)
	}
	// A page at a time, with next_cursor: the same runs in the same order.
	var paged []string
	for query := "?sample_per_mille=1000&page_size=3"; ; {
		r := call(t, s, "GET", "/v1/voiceai/judge/review-queue"+query, adminKey, "")
		var page struct {
			Runs       []queued `json:"runs"`
			HasMore    bool     `json:"has_more"`
			NextCursor *string  `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.Body, &page); r.Code != 200 || err != nil || len(page.Runs) > 3 || page.HasMore != (page.NextCursor != nil) {
			t.Fatalf("a page of the queue: %d %s", r.Code, r.Body)
		}
		for _, run := range page.Runs {
			paged = append(paged, run.RunID)
		}
		if !page.HasMore {
			break
		}
		query = "?sample_per_mille=1000&page_size=3&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if len(paged) != len(all) {
		t.Fatalf("pages of 3 read %v; at once, %+v", paged, all)
	}
	for i, run := range all {
		if paged[i] != run.RunID {
			t.Fatalf("pages of 3 read %v; at once, %+v", paged, all)
		}
	}
	if r := call(t, s, "GET", "/v1/voiceai/judge/review-queue?sample_per_mille=0&cursor=forged", adminKey, ""); r.Code != 422 ||
		!strings.Contains(string(r.Body), `"loc":["query","cursor"]`) {
		t.Fatalf("a forged cursor: %d %s", r.Code, r.Body)
	}

	label := func(inv, run string, correct bool, extra string) map[string]any {
		t.Helper()
		r := call(t, s, "POST", "/v1/convai/test-invocations/"+inv+"/runs/"+run+"/labels", adminKey,
			fmt.Sprintf(`{"verdict_correct":%v%s}`, correct, extra))
		if r.Code != 201 {
			t.Fatalf("label %s: %d %s", run, r.Code, r.Body)
		}
		return r.JSON(t)
	}
	// Refusals: an unknown run, a criterion the test does not have, no verdict.
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+passing+"/runs/"+failed[0]+"/labels", adminKey, `{"verdict_correct":true}`); r.Code != 404 ||
		!strings.Contains(string(r.Body), "test_run_not_found") {
		t.Fatalf("a run of another invocation: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+passing+"/runs/"+passed[0]+"/labels", adminKey,
		`{"verdict_correct":true,"criteria":[{"id":"condition_1","correct":true}]}`); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","criteria",0,"id"]`) {
		t.Fatalf("an unknown criterion: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+passing+"/runs/"+passed[0]+"/labels", adminKey, `{"note":"?"}`); r.Code != 422 {
		t.Fatalf("no verdict_correct: %d %s", r.Code, r.Body)
	}

	// The labels. Passes: 3 right, 1 wrong (its first label said right).
	// Failures: 2 right, 2 wrong.
	verdicts := map[string]bool{passed[0]: true, passed[1]: true, passed[2]: true, passed[3]: false,
		failed[0]: true, failed[1]: true, failed[2]: false, failed[3]: false}
	// One label only, a failure overturned: the judge said fail, people
	// pass, each one answer only, so κ is undefined (null), not 0.
	label(failing, failed[3], false, "")
	var early wire.JudgeReport
	r := call(t, s, "GET", "/v1/voiceai/judge/report", adminKey, "")
	if err := json.Unmarshal(r.Body, &early); r.Code != 200 || err != nil || early.Labels != 1 || len(early.Judges) != 2 {
		t.Fatalf("report of one label: %d %s", r.Code, r.Body)
	}
	for _, j := range early.Judges {
		if j.Confusion != (wire.Confusion{FalseFail: 1}) || j.CohensKappa != nil || j.Series[0].CohensKappa != nil {
			t.Fatalf("one overturned failure: %s", r.Body)
		}
	}
	first := label(passing, passed[3], true, `,"note":"looks fine"`)
	overturn := label(passing, passed[3], false, `,"note":"it never says five","criteria":[{"id":"condition_0","correct":false}]`)
	if overturn["overturned"] != true || overturn["corrected_result"] != "failure" || overturn["reviewed"].(map[string]any)["condition_result"] != "success" ||
		overturn["reviewer"].(map[string]any)["user_id"] == "" || overturn["labelled_at_unix"].(float64) <= 0 {
		t.Fatalf("the overturning label: %v", overturn)
	}
	for _, run := range passed[1:3] {
		label(passing, run, verdicts[run], "")
	}
	// A retried label (the same Idempotency-Key) answers the first and
	// stores nothing new.
	path := "/v1/convai/test-invocations/" + passing + "/runs/" + passed[0] + "/labels"
	once := call(t, s, "POST", path, adminKey, `{"verdict_correct":true}`, "Idempotency-Key", "label-once")
	again := call(t, s, "POST", path, adminKey, `{"verdict_correct":true}`, "Idempotency-Key", "label-once")
	if once.Code != 201 || again.Code != 201 || once.JSON(t)["label_id"] != again.JSON(t)["label_id"] {
		t.Fatalf("a retried label: %d %s, then %d %s", once.Code, once.Body, again.Code, again.Body)
	}
	if r := call(t, s, "GET", path, adminKey, ""); strings.Count(string(r.Body), `"label_id"`) != 1 {
		t.Fatalf("a retried label stored twice: %s", r.Body)
	}
	// The key sent to label another run is refused, not answered as
	// stored: the runs log keeps a message id once, so before, that label
	// was answered 201 and never stored.
	otherRun := "/v1/convai/test-invocations/" + passing + "/runs/" + passed[1] + "/labels"
	before := call(t, s, "GET", otherRun, adminKey, "")
	wantKeyReused(t, call(t, s, "POST", otherRun, adminKey, `{"verdict_correct":true}`, "Idempotency-Key", "label-once"))
	if after := call(t, s, "GET", otherRun, adminKey, ""); string(after.Body) != string(before.Body) {
		t.Fatalf("the refused label changed the run's labels: %s, was %s", after.Body, before.Body)
	}
	for _, run := range failed {
		label(failing, run, verdicts[run], "")
	}

	// History is kept, the last label is current, the run's verdict is
	// what the judge said.
	r = call(t, s, "GET", "/v1/convai/test-invocations/"+passing+"/runs/"+passed[3]+"/labels", adminKey, "")
	var hist struct{ Labels []map[string]any }
	if err := json.Unmarshal(r.Body, &hist); r.Code != 200 || err != nil || len(hist.Labels) != 2 ||
		hist.Labels[0]["label_id"] != first["label_id"] || hist.Labels[1]["label_id"] != overturn["label_id"] {
		t.Fatalf("history: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations/"+passing, adminKey, "")
	var inv struct {
		TestRuns []struct {
			TestRunID       string `json:"test_run_id"`
			Status          string `json:"status"`
			ConditionResult struct {
				Result string `json:"result"`
			} `json:"condition_result"`
			Review *wire.RunLabel `json:"review"`
		} `json:"test_runs"`
	}
	if err := json.Unmarshal(r.Body, &inv); err != nil {
		t.Fatal(err)
	}
	for _, run := range inv.TestRuns {
		if run.Status != "passed" || run.ConditionResult.Result != "success" || run.Review == nil {
			t.Fatalf("run %s after labels: %s %s review %v", run.TestRunID, run.Status, run.ConditionResult.Result, run.Review)
		}
		if run.TestRunID == passed[3] && run.Review.LabelID != overturn["label_id"] {
			t.Fatalf("the run shows its current label: %v", run.Review)
		}
	}
	// The invocation's current labels, in run order: what a ticket shows.
	r = call(t, s, "GET", "/v1/convai/test-invocations/"+passing+"/labels", adminKey, "")
	var current struct {
		Labels []wire.RunLabel `json:"labels"`
	}
	if err := json.Unmarshal(r.Body, &current); r.Code != 200 || err != nil || len(current.Labels) != 4 {
		t.Fatalf("the invocation's labels: %d %s", r.Code, r.Body)
	}
	for i, l := range current.Labels {
		if want := fmt.Sprintf("trun_%s_%d", strings.TrimPrefix(passing, "tinv_"), i); l.RunID != want {
			t.Fatalf("label %d is of %s, want %s (run order)", i, l.RunID, want)
		}
		if l.Overturned != !verdicts[l.RunID] || (l.RunID == passed[3]) != (l.LabelID == overturn["label_id"]) {
			t.Fatalf("the current label of %s: %+v", l.RunID, l)
		}
	}
	if q := queue("?sample_per_mille=1000"); len(q) != 0 {
		t.Fatalf("every run is labelled: %+v", q)
	}

	// By hand, from the verdicts above: the judge passed the 4 passes and
	// failed the 4 failures; the truth is the judge's verdict when the
	// label says right, the other one when it says wrong.
	var hand confusion
	for run, right := range verdicts {
		judgePassed := strings.HasPrefix(run, "trun_"+strings.TrimPrefix(passing, "tinv_"))
		hand.add(judgePassed, judgePassed == right)
	}
	n, po, kappa := hand.n(), hand.agreement(), hand.kappa()
	if n != 8 || po != 0.625 || math.Abs(kappa-0.25) > 1e-12 {
		t.Fatalf("hand computation: n %v p_o %v κ %v", n, po, kappa)
	}

	var report wire.JudgeReport
	r = call(t, s, "GET", "/v1/voiceai/judge/report", adminKey, "")
	if err := json.Unmarshal(r.Body, &report); r.Code != 200 || err != nil || report.Labels != 8 || len(report.Judges) != 2 {
		t.Fatalf("report: %d %s", r.Code, r.Body)
	}
	for _, j := range report.Judges {
		if j.JudgeModel != "offline-v2" || j.Labels != 8 || j.Agreement.Value == nil || *j.Agreement.Value != po ||
			j.CohensKappa == nil || math.Abs(*j.CohensKappa-kappa) > 1e-4 {
			t.Fatalf("judge figures %+v: want agreement %v κ %v", j, po, kappa)
		}
		// TPR 3/(3+2), TNR 2/(2+1), false-pass 1/(3+1); agreement's Wilson 95% of 5/8 is 0.3057–0.8632.
		if j.TruePassRate.Count != 3 || j.TruePassRate.N != 5 || j.TrueFailRate.Count != 2 || j.TrueFailRate.N != 3 ||
			j.FalsePassRate.Count != 1 || j.FalsePassRate.N != 4 || j.Agreement.CI95[0] != 0.3057 || j.Agreement.CI95[1] != 0.8632 {
			t.Fatalf("rates %+v", j)
		}
		if len(j.Series) != 1 || j.Series[0].Labels != 8 {
			t.Fatalf("series %+v", j.Series)
		}
	}
	if test := report.Judges[1]; test.TestID == nil || *test.TestID != hours || len(test.Criteria) != 1 ||
		test.Criteria[0].ID != "condition_0" || test.Criteria[0].Labels != 1 || test.Criteria[0].Agreement.Count != 0 {
		t.Fatalf("the test's row: %+v", test)
	}
	r = call(t, s, "GET", "/v1/voiceai/judge/report?judge_model=another", adminKey, "")
	if err := json.Unmarshal(r.Body, &report); err != nil || report.Labels != 0 || len(report.Judges) != 0 {
		t.Fatalf("another judge: %s", r.Body)
	}

	// A label reviews one attempt. Resubmitted, a labelled run is judged
	// anew: its new verdict has no review and is queued again; the label
	// of its first attempt stays in its history.
	rerun := failed[0]
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+failing+"/resubmit", adminKey,
		fmt.Sprintf(`{"test_run_ids":[%q],"agent_id":%q}`, rerun, agent)); r.Code != 200 {
		t.Fatalf("resubmit: %d %s", r.Code, r.Body)
	}
	type reviewed struct {
		TestRunID string         `json:"test_run_id"`
		Status    string         `json:"status"`
		Attempt   int            `json:"attempt"`
		Review    *wire.RunLabel `json:"review"`
	}
	var resubmitted struct {
		Status   string     `json:"status"`
		TestRuns []reviewed `json:"test_runs"`
	}
	eventually(t, 30*time.Second, "the resubmitted run is judged anew", func() bool {
		r := call(t, s, "GET", "/v1/convai/test-invocations/"+failing, adminKey, "")
		if json.Unmarshal(r.Body, &resubmitted) != nil || resubmitted.Status != "completed" {
			return false
		}
		for _, run := range resubmitted.TestRuns {
			if run.TestRunID == rerun {
				return run.Attempt == 2
			}
		}
		return false
	})
	for _, run := range resubmitted.TestRuns {
		if run.Status != "failed" || (run.TestRunID == rerun) != (run.Review == nil) {
			t.Fatalf("after resubmitting %s, run %s: %s, attempt %d, review %+v; want a review on the other runs only",
				rerun, run.TestRunID, run.Status, run.Attempt, run.Review)
		}
	}
	if q := queue("?sample_per_mille=0"); len(q) != 1 || q[0].RunID != rerun || q[0].Reasons[0] != "failed" || q[0].Label != nil {
		t.Fatalf("the new verdict is not queued for review: %+v", q)
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations/"+failing+"/runs/"+rerun+"/labels", adminKey, "")
	if err := json.Unmarshal(r.Body, &hist); r.Code != 200 || err != nil || len(hist.Labels) != 1 || hist.Labels[0]["attempt"] != 1.0 {
		t.Fatalf("the first attempt's label: %d %s", r.Code, r.Body)
	}
	if l := label(failing, rerun, true, ""); l["attempt"] != 2.0 {
		t.Fatalf("a label of the new verdict: %v", l)
	}
	if q := queue("?sample_per_mille=0"); len(q) != 0 {
		t.Fatalf("the new verdict, labelled, is still queued: %+v", q)
	}
}

// tests run --wait --min-judge-agreement against the stack: a test whose
// judge has no labels is not gated on (exit 3, saying why); once people
// have labelled enough of its runs right through the CLI, it gates.
func TestCLIMinJudgeAgreement(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	voiceai := func(args ...string) (int, string, string) {
		t.Helper()
		return voiceaiCLI(t, s, args...)
	}
	gated := []string{"tests", "run", "--agent", agent, "--test", hours, "--repeat", "2", "--wait", "--poll", "50ms",
		"--min-judge-agreement", "0.8", "--min-judge-labels", "2"}
	code, out, errOut := voiceai(gated...)
	if code != cli.ExitUngated || !strings.Contains(out, "2 passed, 0 failed of 2 run(s)") ||
		!strings.Contains(errOut, "Not gating on these results: the judge of 1 test(s) is below --min-judge-agreement 0.80 (at least 2 labels)") ||
		!strings.Contains(errOut, hours+" (Opening hours), judge offline-v2: no labels") {
		t.Fatalf("an unlabelled judge: exit %d\n%s%s", code, out, errOut)
	}
	// Label both runs of that invocation right, from the CLI.
	code, out, _ = voiceai("judge", "queue", "--sample-per-mille", "1000")
	if code != 0 || strings.Count(out, "sampled_pass") != 2 {
		t.Fatalf("queue: %d %s", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		if code, out, errOut := voiceai("judge", "label", f[0], f[1], "--right", "--note", "states nine to five"); code != 0 || !strings.Contains(out, "the judge was right") {
			t.Fatalf("label: %d %s%s", code, out, errOut)
		}
	}
	if code, out, _ := voiceai("judge", "report"); code != 0 || !strings.Contains(out, "offline/offline-v2") || !strings.Contains(out, "1.00 (0.34–1.00)") {
		t.Fatalf("report: %d %s", code, out)
	}
	if code, out, errOut := voiceai(gated...); code != cli.ExitOK || strings.Contains(errOut, "Not gating") {
		t.Fatalf("a calibrated judge gates: exit %d\n%s%s", code, out, errOut)
	}
}

// With a model judge that changes its mind, the run whose votes disagreed
// is queued for review as such, and the report's flip rate is its votes'
// pairs that differ; a run judged once adds no pair.
func TestReviewQueueAndFlipRateOfAModelJudge(t *testing.T) {
	t.Parallel()
	fail, pass := llmtest.Verdict("failure", "The hours are missing."), llmtest.Verdict("success", "The hours are given.")
	// Run 1: failure, success, success (passes, 2 of 3 pairs differ);
	// run 2: success at once (one vote).
	s, _ := startWithModel(t, llmtest.AgentAndJudge(llmtest.Fixed(0, "We are open nine to five every weekday."),
		llmtest.Sequence(fail, pass, pass, pass)))
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	first := runAndWait(t, s, agent, 1, hours)
	runAndWait(t, s, agent, 1, hours)

	r := call(t, s, "GET", "/v1/voiceai/judge/review-queue?sample_per_mille=0", adminKey, "")
	var q struct {
		Runs []struct {
			InvocationID string   `json:"invocation_id"`
			Status       string   `json:"status"`
			Reasons      []string `json:"reasons"`
			JudgeVotes   []string `json:"judge_votes"`
			JudgeModel   string   `json:"judge_model"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(r.Body, &q); r.Code != 200 || err != nil || len(q.Runs) != 1 || q.Runs[0].InvocationID != first ||
		q.Runs[0].Status != "passed" || fmt.Sprint(q.Runs[0].Reasons) != "[votes_disagreed]" ||
		fmt.Sprint(q.Runs[0].JudgeVotes) != "[failure success success]" || q.Runs[0].JudgeModel != "test-model" {
		t.Fatalf("queue: %d %s", r.Code, r.Body)
	}
	var report wire.JudgeReport
	r = call(t, s, "GET", "/v1/voiceai/judge/report", adminKey, "")
	if err := json.Unmarshal(r.Body, &report); r.Code != 200 || err != nil || len(report.Judges) != 2 {
		t.Fatalf("report: %d %s", r.Code, r.Body)
	}
	for _, j := range report.Judges {
		if j.JudgeModel != "test-model" || j.Labels != 0 || j.FlipRuns != 1 || j.FlipRate.Count != 2 || j.FlipRate.N != 3 ||
			j.FlipRate.Value == nil || *j.FlipRate.Value != 0.6667 {
			t.Fatalf("flip rate: %s", r.Body)
		}
	}
}
