package stack

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/cli"
)

// evaluatedAgent is an agent with two evaluation criteria the offline
// judge can tell apart: the opening hours, and the refund window.
func evaluatedAgent(t *testing.T, s *Stack) string {
	t.Helper()
	return createAgent(t, s, adminKey, `{"name":"Front desk",
	  "conversation_config":{"agent":{"prompt":{"prompt":"Our opening hours are nine to five every weekday. Refunds are given within 30 days."}}},
	  "platform_settings":{"evaluation":{"criteria":[
	    {"id":"hours","name":"Hours given","type":"prompt","conversation_goal_prompt":"The agent states the opening hours nine to five"},
	    {"id":"refund","name":"Refund window","type":"prompt","conversation_goal_prompt":"The agent says refunds are given within 30 days"}]}}}`)
}

// recordConversation ingests a finished conversation whose agent says
// each of lines in turn, and waits until its transcript is kept.
func recordConversation(t *testing.T, s *Stack, agent, id string, lines ...string) {
	t.Helper()
	at := time.Now().Add(-time.Hour)
	turns := []map[string]any{{"role": "user", "message": "Hello, a few questions.", "time_in_call_secs": 0}}
	for i, l := range lines {
		turns = append(turns, map[string]any{"role": "agent", "message": l, "time_in_call_secs": 2 + i})
	}
	ingest(t, s, adminKey, "conversation_started", at, map[string]any{"conversation_id": id, "agent_id": agent})
	ingest(t, s, adminKey, "conversation_ended", at.Add(time.Minute), map[string]any{"conversation_id": id, "agent_id": agent,
		"call_successful": "success", "transcript": turns})
	eventually(t, 10*time.Second, "the transcript of "+id+" is kept", func() bool {
		r := call(t, s, "GET", "/v1/convai/conversations/"+id, adminKey, "")
		return r.Code == 200 && strings.Contains(string(r.Body), `"message":"Hello, a few questions."`)
	})
}

// analyse re-judges a conversation and answers its stored analysis.
func analyse(t *testing.T, s *Stack, id string) (analysisID, callSuccessful string, criteria map[string]string) {
	t.Helper()
	r := call(t, s, "POST", "/v1/convai/conversations/"+id+"/analysis/run", adminKey, "")
	var got struct {
		AnalysisID string                    `json:"analysis_id"`
		Stored     bool                      `json:"stored"`
		Analysis   wire.ConversationAnalysis `json:"analysis"`
	}
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil || !got.Stored {
		t.Fatalf("analysis of %s: %d %s", id, r.Code, r.Body)
	}
	criteria = map[string]string{}
	for _, c := range got.Analysis.EvaluationCriteriaResultsList {
		criteria[c.ID] = c.Result
	}
	return got.AnalysisID, got.Analysis.CallSuccessful, criteria
}

// A conversation's evaluation is labelled like a run's verdict: the label
// names the analysis it reviewed, the analysis is not changed, and the
// judge report counts the labels per judge model and criterion, its
// agreement and κ equal to a hand computation.
func TestConversationEvaluationLabelsThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := evaluatedAgent(t, s)
	hours, refund, neither := "Our opening hours are nine to five every weekday.", "Refunds are given within 30 days.", "I am not sure, sorry."
	convs := map[string][]string{
		"conv_eval_1": {hours}, "conv_eval_2": {hours, refund}, "conv_eval_3": {neither},
		"conv_eval_4": {hours, refund}, "conv_eval_5": {hours},
	}
	for id, lines := range convs {
		recordConversation(t, s, agent, id, lines...)
	}
	recordConversation(t, s, agent, "conv_eval_unjudged", neither)

	label := func(id, body string, headers ...string) response {
		t.Helper()
		return call(t, s, "POST", "/v1/voiceai/conversations/"+id+"/evaluation/labels", adminKey, body, headers...)
	}
	// Before any analysis there is nothing to label; an unknown
	// conversation, or another workspace's, is not found.
	wantError(t, label("conv_eval_unjudged", `{"verdict_correct":true}`), 409, "conversation_not_analysed")
	wantError(t, label("conv_eval_nobody", `{"verdict_correct":true}`), 404, "conversation_not_found")

	judged := map[string]string{}
	criteria := map[string]map[string]string{}
	analyses := map[string]string{}
	for id := range convs {
		analyses[id], judged[id], criteria[id] = analyse(t, s, id)
	}
	if judged["conv_eval_1"] != "failure" || judged["conv_eval_2"] != "success" {
		t.Fatalf("the offline judge's verdicts: %v %v", judged, criteria)
	}

	other := createWorkspace(t, s, "Elsewhere")
	wantError(t, call(t, s, "POST", "/v1/voiceai/conversations/conv_eval_1/evaluation/labels", other.APIKey, `{"verdict_correct":true}`), 404, "conversation_not_found")
	wantError(t, call(t, s, "GET", "/v1/voiceai/conversations/conv_eval_1/evaluation/labels", other.APIKey, ""), 404, "conversation_not_found")
	// Malformed bodies.
	if r := label("conv_eval_1", `{"verdict_correct":`); r.Code != 400 {
		t.Fatalf("a body that is not JSON: %d %s", r.Code, r.Body)
	}
	if r := label("conv_eval_1", `{"note":"?"}`); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","verdict_correct"]`) {
		t.Fatalf("no verdict_correct: %d %s", r.Code, r.Body)
	}
	if r := label("conv_eval_1", `{"verdict_correct":true,"criteria":[{"id":"tone","correct":true}]}`); r.Code != 422 ||
		!strings.Contains(string(r.Body), `"loc":["body","criteria",0,"id"]`) {
		t.Fatalf("a criterion the analysis did not judge: %d %s", r.Code, r.Body)
	}

	// The labels: 1, 2 and 5 right, 3 and 4 wrong; on conv_eval_4 the
	// refund criterion is marked wrong too.
	right := map[string]bool{"conv_eval_1": true, "conv_eval_2": true, "conv_eval_3": false, "conv_eval_4": false, "conv_eval_5": true}
	for id, ok := range right {
		extra := ""
		if id == "conv_eval_4" {
			extra = `,"criteria":[{"id":"refund","correct":false},{"id":"hours","correct":true}],"note":"It never names the window"`
		}
		r := label(id, fmt.Sprintf(`{"verdict_correct":%v%s}`, ok, extra))
		if r.Code != 201 {
			t.Fatalf("label %s: %d %s", id, r.Code, r.Body)
		}
		l := r.JSON(t)
		reviewed := l["reviewed"].(map[string]any)
		if reviewed["analysis_id"] != analyses[id] || reviewed["call_successful"] != judged[id] || reviewed["judge_model"] != "offline-v2" ||
			l["overturned"] != !ok || l["reviewer"].(map[string]any)["user_id"] == "" {
			t.Fatalf("label of %s: %s", id, r.Body)
		}
		if !ok && judged[id] != "unknown" && l["corrected_result"] == judged[id] {
			t.Fatalf("an overturning label keeps the verdict: %s", r.Body)
		}
	}
	// A retried label (the same Idempotency-Key) answers the first and
	// stores nothing new; the last label is current, the history kept.
	once := label("conv_eval_5", `{"verdict_correct":true,"note":"checked twice"}`, "Idempotency-Key", "conv-label-once")
	again := label("conv_eval_5", `{"verdict_correct":true,"note":"checked twice"}`, "Idempotency-Key", "conv-label-once")
	if once.Code != 201 || again.Code != 201 || once.JSON(t)["label_id"] != again.JSON(t)["label_id"] {
		t.Fatalf("a retried label: %d %s, then %d %s", once.Code, once.Body, again.Code, again.Body)
	}
	r := call(t, s, "GET", "/v1/voiceai/conversations/conv_eval_5/evaluation/labels", adminKey, "")
	var hist struct {
		Labels []map[string]any `json:"labels"`
	}
	if err := json.Unmarshal(r.Body, &hist); r.Code != 200 || err != nil || len(hist.Labels) != 2 || hist.Labels[1]["label_id"] != once.JSON(t)["label_id"] {
		t.Fatalf("history: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/v1/voiceai/conversations/conv_eval_unjudged/evaluation/labels", adminKey, ""); r.Code != 200 || strings.TrimSpace(string(r.Body)) != `{"labels":[]}` {
		t.Fatalf("a conversation without labels: %d %s", r.Code, r.Body)
	}
	// The analysis itself is unchanged, and the conversation shows its
	// current label.
	eventually(t, 10*time.Second, "the conversation shows its label", func() bool {
		r := call(t, s, "GET", "/v1/convai/conversations/conv_eval_4", adminKey, "")
		var c struct {
			Analysis wire.ConversationAnalysis `json:"analysis"`
			Label    *wire.VerdictLabel        `json:"evaluation_label"`
		}
		return json.Unmarshal(r.Body, &c) == nil && c.Label != nil && c.Label.Overturned && c.Label.Note == "It never names the window" &&
			c.Analysis.Judge != nil && c.Analysis.Judge.AnalysisID == analyses["conv_eval_4"] && c.Analysis.CallSuccessful == judged["conv_eval_4"]
	})

	// By hand: the truth is the judge's verdict when the label says
	// right, the other one when it says wrong; unknown verdicts are left
	// out.
	var hand confusion
	for id, ok := range right {
		if judged[id] != "success" && judged[id] != "failure" {
			continue
		}
		judgePassed := judged[id] == "success"
		hand.add(judgePassed, judgePassed == ok)
	}
	po, kappa := hand.agreement(), hand.kappa()
	if hand.n() < 4 || hand.tp+hand.fp == 0 || hand.ff+hand.tf == 0 {
		t.Fatalf("the judge gave one answer only (%v): no κ to compare", judged)
	}

	var report wire.JudgeReport
	r = call(t, s, "GET", "/v1/voiceai/judge/report", adminKey, "")
	if err := json.Unmarshal(r.Body, &report); r.Code != 200 || err != nil || report.Labels != 5 || len(report.Judges) != 2 {
		t.Fatalf("report: %d %s", r.Code, r.Body)
	}
	for i, j := range report.Judges {
		if j.JudgeModel != "offline-v2" || j.Labels != 5 || j.Agreement.Value == nil || math.Abs(*j.Agreement.Value-po) > 1e-4 ||
			j.CohensKappa == nil || math.Abs(*j.CohensKappa-kappa) > 1e-4 || j.TestID != nil {
			t.Fatalf("judge row %d %+v: want agreement %v κ %v", i, j, po, kappa)
		}
	}
	all, convRow := report.Judges[0], report.Judges[1]
	if all.Scope != "all" || all.AgentID != nil || convRow.Scope != "conversations" || convRow.AgentID == nil || *convRow.AgentID != agent {
		t.Fatalf("rows: %s", r.Body)
	}
	if len(convRow.Criteria) != 2 || convRow.Criteria[0].ID != "hours" || convRow.Criteria[0].Labels != 1 || convRow.Criteria[0].Agreement.Count != 1 ||
		convRow.Criteria[1].ID != "refund" || convRow.Criteria[1].Text != "Refund window" || convRow.Criteria[1].Agreement.Count != 0 || convRow.Criteria[1].Agreement.N != 1 {
		t.Fatalf("criteria: %+v", convRow.Criteria)
	}
	// Each criterion has one label, so each side gave one answer: κ is
	// undefined (null), for the overturned refund verdict as for the
	// confirmed hours one.
	if convRow.Criteria[0].CohensKappa != nil || convRow.Criteria[1].CohensKappa != nil {
		t.Fatalf("κ of criteria with one label each: %v, %v; want null", convRow.Criteria[0].CohensKappa, convRow.Criteria[1].CohensKappa)
	}
	// A report of one test counts no conversation.
	r = call(t, s, "GET", "/v1/voiceai/judge/report?test_id=test_none", adminKey, "")
	if err := json.Unmarshal(r.Body, &report); err != nil || report.Labels != 0 {
		t.Fatalf("one test's report: %s", r.Body)
	}
}

func ticketLabels(t *testing.T, s *Stack, id string) []wire.VerdictLabel {
	t.Helper()
	r := call(t, s, "GET", "/v1/convai/triage-tickets/"+id, adminKey, "")
	var tk struct {
		Labels []wire.VerdictLabel `json:"verdict_labels"`
	}
	if err := json.Unmarshal(r.Body, &tk); r.Code != 200 || err != nil {
		t.Fatalf("get ticket: %d %s", r.Code, r.Body)
	}
	return tk.Labels
}

// A ticket raised on a failed run, or on a conversation, shows the current
// labels of that run or conversation: who, when, what was overturned. The
// tickets service projects the label events; it does not ask the testing
// service on read.
func TestLabelsShowOnTheTicket(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	vouchers := createTest(t, s, unknownTest)
	inv := runAndWait(t, s, agent, 2, vouchers)
	var tk ticket
	eventually(t, 30*time.Second, "the failing test's ticket", func() bool {
		list := agentTickets(t, s, agent, "label=test-failure")
		if len(list) == 1 {
			tk = list[0]
		}
		return len(list) == 1 && tk.TestFailures != nil && tk.TestFailures.FailedRuns == 2
	})
	if l := ticketLabels(t, s, tk.AgentqaTicketID); len(l) != 0 {
		t.Fatalf("labels before any: %+v", l)
	}
	runs := tk.TestFailures.Invocations[0].RunIDs
	// The first run's verdict is overturned (its first label said right);
	// the second's stands.
	for _, body := range []string{`{"verdict_correct":true}`,
		`{"verdict_correct":false,"note":"Vouchers are on the website","criteria":[{"id":"condition_0","correct":false}]}`} {
		if r := call(t, s, "POST", "/v1/convai/test-invocations/"+inv+"/runs/"+runs[0]+"/labels", adminKey, body); r.Code != 201 {
			t.Fatalf("label: %d %s", r.Code, r.Body)
		}
	}
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+inv+"/runs/"+runs[1]+"/labels", adminKey, `{"verdict_correct":true}`); r.Code != 201 {
		t.Fatalf("label: %d %s", r.Code, r.Body)
	}
	var labels []wire.VerdictLabel
	eventually(t, 10*time.Second, "the ticket shows the runs' current labels", func() bool {
		labels = ticketLabels(t, s, tk.AgentqaTicketID)
		return len(labels) == 2 && labels[0].Note != ""
	})
	first, second := labels[0], labels[1]
	if first.Kind != "run" || first.InvocationID == nil || *first.InvocationID != inv || first.RunID == nil || *first.RunID != runs[0] || !first.Overturned || first.VerdictCorrect ||
		first.JudgedResult != "failure" || first.CorrectedResult == nil || *first.CorrectedResult != "success" || first.JudgeModel != "offline-v2" ||
		first.Note != "Vouchers are on the website" || first.Reviewer.UserID == "" || first.LabelledAtUnix <= 0 ||
		len(first.Criteria) != 1 || first.Criteria[0].Correct {
		t.Fatalf("the overturned run's label: %+v", first)
	}
	if second.RunID == nil || *second.RunID != runs[1] || second.Overturned || second.CorrectedResult != nil {
		t.Fatalf("the standing run's label: %+v", second)
	}

	// A ticket raised on a conversation shows its evaluation's label.
	convAgent := evaluatedAgent(t, s)
	recordConversation(t, s, convAgent, "conv_ticketed", "Our opening hours are nine to five every weekday.")
	analysisID, _, _ := analyse(t, s, "conv_ticketed")
	r := call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_ticketed","qa_comment":"The refund window is missing"}`)
	if r.Code != 201 {
		t.Fatalf("ticket on the conversation: %d %s", r.Code, r.Body)
	}
	convTicket := r.JSON(t)["agentqa_ticket_id"].(string)
	if r := call(t, s, "POST", "/v1/voiceai/conversations/conv_ticketed/evaluation/labels", adminKey,
		`{"verdict_correct":true,"criteria":[{"id":"refund","correct":true}],"note":"Right: no refund window"}`); r.Code != 201 {
		t.Fatalf("label: %d %s", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the conversation's ticket shows its label", func() bool {
		labels = ticketLabels(t, s, convTicket)
		return len(labels) == 1
	})
	if l := labels[0]; l.Kind != "conversation" || l.ConversationID == nil || *l.ConversationID != "conv_ticketed" || l.InvocationID != nil || l.Overturned || l.Note != "Right: no refund window" ||
		l.JudgeModel != "offline-v2" || len(l.Criteria) != 1 || l.Criteria[0].ID != "refund" {
		t.Fatalf("the conversation's label on its ticket: %+v (analysis %s)", l, analysisID)
	}
	// Another workspace cannot read the ticket.
	other := createWorkspace(t, s, "Elsewhere")
	if r := call(t, s, "GET", "/v1/convai/triage-tickets/"+convTicket, other.APIKey, ""); r.Code != 404 {
		t.Fatalf("another workspace's ticket: %d %s", r.Code, r.Body)
	}
}

// runVerdicts is what an invocation records of its runs' verdicts, to
// compare before and after a re-judging.
func runVerdicts(t *testing.T, s *Stack, inv string) string {
	t.Helper()
	r := call(t, s, "GET", "/v1/convai/test-invocations/"+inv, adminKey, "")
	var got struct {
		Runs []struct {
			ID              string         `json:"test_run_id"`
			Status          string         `json:"status"`
			ConditionResult map[string]any `json:"condition_result"`
			ModelUsage      map[string]any `json:"model_usage"`
		} `json:"test_runs"`
	}
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil {
		t.Fatalf("invocation: %d %s", r.Code, r.Body)
	}
	b, _ := json.Marshal(got)
	return string(b)
}

// A labelled set is judged again by another judge model: each vote is
// recorded, no run's verdict changes, and the report compares both models
// on the same labels (agreement and κ of each, by hand).
func TestRejudgeALabelledSetAndCompareJudges(t *testing.T) {
	t.Parallel()
	// The platform's judge ("test-model") passes every reply; the
	// agent always answers with the opening hours. The offline judge
	// passes the hours test and fails the vouchers one.
	s, _ := startWithModel(t, llmtest.AgentAndJudge(llmtest.Fixed(0, "We are open nine to five every weekday."),
		llmtest.Sequence(llmtest.Verdict("success", "The reply answers."))))
	agent := agentWith(t, s)
	hours, vouchers := createTest(t, s, hoursTest), createTest(t, s, unknownTest)
	inv := runAndWait(t, s, agent, 2, hours, vouchers)
	before := runVerdicts(t, s, inv)

	// People: the hours runs passed rightly, the vouchers runs wrongly.
	truth := map[string]bool{}
	original := map[string]string{}
	for _, run := range getInvocation(t, s, inv).TestRuns {
		right := run.TestID == hours
		if r := call(t, s, "POST", "/v1/convai/test-invocations/"+inv+"/runs/"+run.TestRunID+"/labels", adminKey,
			fmt.Sprintf(`{"verdict_correct":%v}`, right)); r.Code != 201 {
			t.Fatalf("label: %d %s", r.Code, r.Body)
		}
		original[run.TestRunID] = run.ConditionResult.Result
		truth[run.TestRunID] = (run.ConditionResult.Result == "success") == right
	}

	rejudge := func(key, body string, headers ...string) response {
		t.Helper()
		if key == "" {
			key = adminKey
		}
		return call(t, s, "POST", "/v1/voiceai/judge/rejudge", key, body, headers...)
	}
	// Refusals: a judge the runners do not have, a body that is not JSON,
	// another workspace's invocation.
	if r := rejudge("", `{"judge_model":"gpt-9"}`); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","judge_model"]`) ||
		!strings.Contains(string(r.Body), "offline-v2") {
		t.Fatalf("an unknown judge: %d %s", r.Code, r.Body)
	}
	if r := rejudge("", `{"judge_model":`); r.Code != 400 {
		t.Fatalf("a body that is not JSON: %d %s", r.Code, r.Body)
	}
	other := createWorkspace(t, s, "Elsewhere")
	wantError(t, rejudge(other.APIKey, fmt.Sprintf(`{"judge_model":"offline-v2","filter":{"invocation_id":%q}}`, inv)), 404, "test_invocation_not_found")

	body := fmt.Sprintf(`{"judge_model":"offline-v2","filter":{"invocation_id":%q}}`, inv)
	r := rejudge("", body, "Idempotency-Key", "rejudge-once")
	type vote struct {
		RunID  string `json:"run_id"`
		Result string `json:"result"`
		Error  string `json:"error"`
	}
	var got struct {
		RejudgeID  string `json:"rejudge_id"`
		JudgeModel string `json:"judge_model"`
		Runs       int    `json:"runs"`
		Votes      []vote `json:"votes"`
	}
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil || got.Runs != 4 || got.JudgeModel != "offline-v2" {
		t.Fatalf("rejudge: %d %s", r.Code, r.Body)
	}
	offline := map[string]string{}
	for _, v := range got.Votes {
		offline[v.RunID] = v.Result
		if v.Error != "" {
			t.Fatalf("vote: %+v", v)
		}
	}
	hoursRun, vouchersRun := "", ""
	for _, run := range getInvocation(t, s, inv).TestRuns {
		if run.TestID == hours {
			hoursRun = run.TestRunID
		} else {
			vouchersRun = run.TestRunID
		}
	}
	if offline[hoursRun] != "success" || offline[vouchersRun] != "failure" {
		t.Fatalf("the offline judge's votes: %v", offline)
	}
	// A retry with the same key answers the first votes.
	again := rejudge("", body, "Idempotency-Key", "rejudge-once")
	if again.Code != 200 || again.JSON(t)["rejudge_id"] != got.RejudgeID || string(again.Body) != string(r.Body) {
		t.Fatalf("a retried re-judging: %d %s\nfirst %s", again.Code, again.Body, r.Body)
	}
	// A filter that selects no labelled run judges nothing.
	if r := rejudge("", `{"judge_model":"offline-v2","filter":{"test_id":"test_none"}}`); r.Code != 200 ||
		r.JSON(t)["runs"] != float64(0) || r.JSON(t)["judge_model"] != "offline-v2" {
		t.Fatalf("nothing to re-judge: %d %s", r.Code, r.Body)
	}
	// No run's recorded verdict changed.
	if after := runVerdicts(t, s, inv); after != before {
		t.Fatalf("the runs changed:\nbefore %s\nafter  %s", before, after)
	}

	// By hand: each model's confusion on the same four labelled runs.
	figures := func(verdicts map[string]string) (po, kappa float64) {
		var hand confusion
		for run, passed := range truth {
			hand.add(verdicts[run] == "success", passed)
		}
		return hand.agreement(), hand.kappa()
	}
	wantModel, wantModelK := figures(original)
	wantOffline, wantOfflineK := figures(offline)
	if wantModel != 0.5 || wantModelK != 0 || wantOffline != 1 || wantOfflineK != 1 {
		t.Fatalf("hand figures: test-model %v κ %v, offline %v κ %v", wantModel, wantModelK, wantOffline, wantOfflineK)
	}
	var report wire.JudgeReport
	r = call(t, s, "GET", "/v1/voiceai/judge/report?compare=test-model,offline-v2", adminKey, "")
	if err := json.Unmarshal(r.Body, &report); r.Code != 200 || err != nil || report.Compare == nil || report.Compare.Runs != 4 || len(report.Compare.Judges) != 2 {
		t.Fatalf("compare: %d %s", r.Code, r.Body)
	}
	for _, j := range report.Compare.Judges {
		want, wantK := wantModel, wantModelK
		if j.JudgeModel == "offline-v2" {
			want, wantK = wantOffline, wantOfflineK
		}
		if j.Labels != 4 || j.Agreement.Value == nil || *j.Agreement.Value != want || j.CohensKappa == nil || math.Abs(*j.CohensKappa-wantK) > 1e-4 {
			t.Fatalf("compared %s: %s", j.JudgeModel, r.Body)
		}
	}
	// The lexical offline judge that offline-v2 replaced is there to
	// compare with too, before anyone switches.
	if r := rejudge("", fmt.Sprintf(`{"judge_model":"offline-v1","filter":{"invocation_id":%q}}`, inv)); r.Code != 200 || r.JSON(t)["judge_model"] != "offline-v1" {
		t.Fatalf("rejudge with offline-v1: %d %s", r.Code, r.Body)
	}
	var both wire.JudgeReport
	if r := call(t, s, "GET", "/v1/voiceai/judge/report?compare=offline-v1,offline-v2", adminKey, ""); r.Code != 200 ||
		json.Unmarshal(r.Body, &both) != nil || both.Compare == nil || both.Compare.Runs != 4 || len(both.Compare.Judges) != 2 {
		t.Fatalf("compare the offline judges: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/v1/voiceai/judge/report?compare=offline-v2", adminKey, ""); r.Code != 422 ||
		!strings.Contains(string(r.Body), `"loc":["query","compare"]`) {
		t.Fatalf("one model to compare: %d %s", r.Code, r.Body)
	}
}

// The CLI through the gateway: a conversation analysed and its evaluation
// labelled, a labelled set judged again by the offline judge, and the
// report comparing the two judges.
func TestCLIJudgeConversationsAndRejudge(t *testing.T) {
	t.Parallel()
	s, _ := startWithModel(t, llmtest.AgentAndJudge(llmtest.Fixed(0, "We are open nine to five every weekday."),
		llmtest.Sequence(llmtest.Verdict("success", "The reply answers."))))
	voiceai := func(args ...string) (int, string, string) {
		t.Helper()
		return voiceaiCLI(t, s, args...)
	}
	agent := evaluatedAgent(t, s)
	recordConversation(t, s, agent, "conv_cli", "Our opening hours are nine to five every weekday.")
	if code, out, _ := voiceai("judge", "analyse", "conv_cli"); code != cli.ExitOK || !strings.Contains(out, "conv_cli judged by test-model: SUCCESS") {
		t.Fatalf("analyse: %d %s", code, out)
	}
	if code, out, _ := voiceai("judge", "label-conversation", "conv_cli", "--wrong", "--criterion", "refund=wrong", "--note", "no refund window"); code != cli.ExitOK ||
		!strings.Contains(out, "the judge (test-model) was wrong, the right result is failure") {
		t.Fatalf("label-conversation: %d %s", code, out)
	}
	if code, _, errOut := voiceai("judge", "label-conversation", "conv_none", "--right"); code == cli.ExitOK || !strings.Contains(errOut, "conversation_not_found") {
		t.Fatalf("an unknown conversation: %d %s", code, errOut)
	}

	tests := createTest(t, s, hoursTest)
	inv := runAndWait(t, s, agentWith(t, s), 2, tests)
	before := runVerdicts(t, s, inv)
	for _, run := range getInvocation(t, s, inv).TestRuns {
		if code, out, _ := voiceai("judge", "label", inv, run.TestRunID, "--right"); code != cli.ExitOK {
			t.Fatalf("label: %d %s", code, out)
		}
	}
	if code, out, _ := voiceai("judge", "rejudge", "--judge-model", "offline-v2", "--invocation", inv); code != cli.ExitOK ||
		!strings.Contains(out, "offline-v2 judged 2 labelled run(s) again") {
		t.Fatalf("rejudge: %d %s", code, out)
	}
	if after := runVerdicts(t, s, inv); after != before {
		t.Fatalf("the runs changed:\nbefore %s\nafter  %s", before, after)
	}
	code, out, _ := voiceai("judge", "report", "--compare", "test-model,offline-v2")
	if code != cli.ExitOK || !strings.Contains(out, "Compared on the same 2 labelled run(s) (test-model, offline-v2)") ||
		!strings.Contains(out, "conversations of "+agent) {
		t.Fatalf("report --compare: %d %s", code, out)
	}
}
