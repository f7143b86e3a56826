package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/identity/operator"
)

// fairnessGoal bounds another workspace's one-run invocation while a
// large invocation runs (issue 47: a backlog never delays another
// workspace's first run by more than a few seconds).
const fairnessGoal = 5 * time.Second

// otherWorkspace is a second workspace of the platform, with an agent and
// a test of its own: its one-run invocations measure fairness (e).
type otherWorkspace struct {
	api         *benchkit.Client
	agent, test string
}

// newOtherWorkspace creates the workspace (through the operator endpoint
// on the bus) and its agent and test.
func (p *platform) newOtherWorkspace() (*otherWorkspace, error) {
	nc, err := nats.Connect(p.NATSURL)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	body, _ := json.Marshal(operator.CreateWorkspaceRequest{Name: "fairness"})
	msg, err := nc.Request(operator.CreateWorkspaceSubject, body, 30*time.Second)
	if err != nil {
		return nil, err
	}
	var ws operator.CreateWorkspaceResponse
	if err := json.Unmarshal(msg.Data, &ws); err != nil || ws.Error != "" {
		return nil, fmt.Errorf("create workspace: %s %v", msg.Data, err)
	}
	o := &otherWorkspace{api: benchkit.NewClient(p.Base, ws.APIKey, 2)}
	if o.agent, err = o.api.CreateAgent(`{"name":"other","conversation_config":{"agent":{"first_message":"Hello!",
	  "prompt":{"prompt":"Our opening hours are nine to five every weekday."}}}}`, ""); err != nil {
		return nil, err
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := o.api.Call("POST", "/v1/convai/agent-testing/create", passingTest(0), &created); err != nil {
		return nil, err
	}
	o.test = created.ID
	return o, nil
}

// oneRun runs the workspace's test once and returns how long the
// invocation took from the run-tests request to completed.
func (o *otherWorkspace) oneRun() (time.Duration, error) {
	started := time.Now()
	var inv struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := o.api.Call("POST", "/v1/convai/agents/"+o.agent+"/run-tests", `{"tests":[{"test_id":"`+o.test+`"}]}`, &inv); err != nil {
		return 0, err
	}
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := o.api.Call("GET", "/v1/convai/test-invocations/"+inv.ID, "", &inv); err != nil {
			return 0, err
		}
		if inv.Status == "completed" {
			return time.Since(started), nil
		}
	}
	return 0, fmt.Errorf("invocation %s not completed in 10 minutes", inv.ID)
}

// fairness is (e): once the large invocation is accepted and running,
// the other workspace runs a one-run invocation every few seconds until
// the large one completes (done), at most samples times.
func (o *otherWorkspace) fairness(started, done <-chan struct{}, samples int) (took []time.Duration, err error) {
	select {
	case <-started:
	case <-done:
		return nil, nil
	}
	for range samples {
		select {
		case <-done:
			return took, nil
		case <-time.After(time.Second): // the backlog is queued and running
		}
		d, err := o.oneRun()
		if err != nil {
			return took, err
		}
		took = append(took, d)
	}
	return took, nil
}

// reportFairness prints (e).
func reportFairness(took []time.Duration, total int) {
	if len(took) == 0 {
		fmt.Printf("(e) fairness: no sample (the %d-run invocation completed first)\n", total)
		return
	}
	worst := slices.Max(took)
	rounded := make([]string, len(took))
	for i, d := range took {
		rounded[i] = d.Round(time.Millisecond).String()
	}
	fmt.Printf("(e) fairness: another workspace's one-run invocation, while the %d-run invocation ran: %v (worst %s, goal <= %s) %s\n",
		total, rounded, worst.Round(time.Millisecond), fairnessGoal, benchkit.Verdict(worst <= fairnessGoal))
}
