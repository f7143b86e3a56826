package multiprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	ticketsadapters "github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// A QA worker process killed (SIGKILL) while it turns failed runs into
// tickets loses nothing and counts nothing twice: the replicas that take
// over get its unacknowledged batches, and every failing test ends with
// exactly one ticket that counts exactly its failed runs.
func TestQAWorkerKilledWhileTicketing(t *testing.T) {
	const tests, repeat = 12, 5
	c := newCluster(t)
	c.start("identity")
	c.start("agents")
	c.start("tickets")
	c.start("testing")
	c.start("testing-runner", "VOICEAI_LLM_PROVIDER=offline")
	// One message a batch, so the kill lands while most are still to do.
	workerEnv := []string{"VOICEAI_QA_BATCH=1", "VOICEAI_QA_ACK_WAIT=2s"}
	doomed := c.start("tickets-qa-worker", workerEnv...)
	gw := c.gateway()

	agent := createAgent(t, gw, `{"name":"hours","conversation_config":{"agent":{"prompt":{"prompt":"We are open nine to five."}}}}`)
	var refs []string
	for i := range tests {
		// The offline model fails it: nothing in the prompt covers vouchers.
		r := do(t, "POST", gw+"/v1/convai/agent-testing/create", adminKey, fmt.Sprintf(`{"type":"llm","name":"vouchers %d",
		  "chat_history":[{"role":"user","message":"Do you sell gift vouchers?","time_in_call_secs":1}],
		  "success_condition":"The agent explains how to buy a gift voucher and what it costs"}`, i))
		var created struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r.body, &created); err != nil || r.code != 200 {
			t.Fatalf("create test: %d %s", r.code, r.body)
		}
		refs = append(refs, `{"test_id":"`+created.ID+`"}`)
	}
	r := do(t, "POST", gw+"/v1/convai/agents/"+agent+"/run-tests", adminKey,
		fmt.Sprintf(`{"tests":[%s],"repeat_count":%d}`, strings.Join(refs, ","), repeat))
	var inv struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(r.body, &inv); err != nil || r.code != 200 {
		t.Fatalf("run-tests: %d %s", r.code, r.body)
	}

	list := func() []qaTicketJSON {
		r := do(t, "GET", gw+"/v1/convai/agents/"+agent+"/triage-tickets?page_size=100&label=test-failure", adminKey, "")
		var page struct {
			Tickets []qaTicketJSON `json:"agent_conversation_tickets"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.code != 200 {
			t.Fatalf("list tickets: %d %s", r.code, r.body)
		}
		return page.Tickets
	}
	var before []qaTicketJSON
	eventually(t, 60*time.Second, "the first worker opened a ticket", func() bool {
		before = list()
		return len(before) > 0
	})
	doomed.kill()
	t.Logf("killed the first worker once %d of %d tickets were listed", len(before), tests)
	c.start("tickets-qa-worker", workerEnv...)
	c.start("tickets-qa-worker", workerEnv...)

	eventually(t, 60*time.Second, "the invocation completes", func() bool {
		r := do(t, "GET", gw+"/v1/convai/test-invocations/"+inv.ID, adminKey, "")
		return json.Unmarshal(r.body, &inv) == nil && inv.Status == "completed"
	})
	runs := qaRunsConsumer(t, c.natsURL)
	eventually(t, 90*time.Second, "every run result is acknowledged by the QA workers", func() bool {
		info, err := runs.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	// The listing follows the workers' writes within moments.
	var tickets []qaTicketJSON
	eventually(t, 30*time.Second, "every failed run is on its test's ticket", func() bool {
		tickets = list()
		total := 0
		for _, tk := range tickets {
			if tk.TestFailures != nil {
				total += tk.TestFailures.FailedRuns
			}
		}
		return total >= tests*repeat
	})
	if len(tickets) != tests {
		t.Fatalf("%d tickets, want one per failing test (%d)", len(tickets), tests)
	}
	seen := map[string]bool{}
	for _, tk := range tickets {
		f := tk.TestFailures
		if f == nil || seen[f.TestID] || f.FailedRuns != repeat || len(f.Invocations) != 1 || len(f.Invocations[0].RunIDs) != repeat {
			t.Fatalf("ticket %s: test_failures %+v, want the test's %d runs exactly once", tk.ID, f, repeat)
		}
		seen[f.TestID] = true
	}
}

type qaTicketJSON struct {
	ID           string `json:"agentqa_ticket_id"`
	TestFailures *struct {
		TestID      string `json:"test_id"`
		FailedRuns  int    `json:"failed_runs"`
		Invocations []struct {
			RunIDs []string `json:"run_ids"`
		} `json:"invocations"`
	} `json:"test_failures"`
}

// qaRunsConsumer is the QA workers' shared consumer of run results.
func qaRunsConsumer(t *testing.T, natsURL string) jetstream.Consumer {
	t.Helper()
	js := testenv.JetStreamAt(t, natsURL)
	var cons jetstream.Consumer
	eventually(t, 30*time.Second, "the QA workers' consumer exists", func() bool {
		c, err := js.Consumer(context.Background(), "TESTRUNS", ticketsadapters.QARunsDurable)
		cons = c
		return err == nil
	})
	return cons
}
