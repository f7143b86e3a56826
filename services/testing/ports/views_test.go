package ports

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// A pending run written from its test's template is the run RunView
// describes, byte for byte, and valid JSON with every field.
func TestPendingRunTemplateMatchesTheView(t *testing.T) {
	test := &testingv1.Test{TestId: "test_1", Type: "llm", DefinitionJson: []byte(`{"name":"Hours","success_condition":"open",
	  "chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":2}],"environment":"staging"}`)}
	inv := &testingv1.Invocation{InvocationId: "tinv_1", WorkspaceId: "ws", AgentId: "agent_1", RepeatCount: 2, CreatedAtUnix: 1700000000,
		Status:         domain.InvocationRunning,
		RanByUserEmail: "a@example.com", Tests: []*testingv1.PlannedTest{{TestId: "test_1", TestName: "Hours", TestType: "llm"}}}
	tv := NewRunTestView(test)
	pending := pendingRuns{}
	for _, id := range []string{"trun_tinv_1_0", "trun_tinv_1_1"} {
		var fromTemplate, direct bytes.Buffer
		if err := pending.write(&fromTemplate, inv, 0, tv, id, app.UnrunStatus(inv, false)); err != nil {
			t.Fatal(err)
		}
		if err := writeRun(&direct, RunView(inv, inv.GetTests()[0], tv, id, nil, app.UnrunStatus(inv, false))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fromTemplate.Bytes(), direct.Bytes()) {
			t.Fatalf("template:\n%s\ndirect:\n%s", fromTemplate.Bytes(), direct.Bytes())
		}
		var run map[string]any
		if err := json.Unmarshal(fromTemplate.Bytes(), &run); err != nil {
			t.Fatalf("invalid JSON: %v\n%s", err, fromTemplate.Bytes())
		}
		info, _ := run["test_info"].(map[string]any)
		if run["test_run_id"] != id || run["status"] != "pending" || run["environment"] != "staging" || info["name"] != "Hours" ||
			!reflect.DeepEqual(run["agent_responses"], []any{}) {
			t.Fatalf("pending run: %v", run)
		}
	}
}
