package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/services/cli"
)

// events tail --json prints each stored event decoded, one JSON object a
// line; webhooks logs filters and webhooks resend delivers again.
func TestCLIEventsTailAndWebhookResend(t *testing.T) {
	// Not in parallel with the other tests: it sets the environment.
	dir := t.TempDir()
	s := start(t, dir, func(c *Config) {
		c.BootstrapAdminKey = adminKey
		c.RateLimitPerMinute, c.RateLimitPerHour = 100_000, 1_000_000
		c.Outbound.AllowHosts = "127.0.0.1"
	})

	// events tail, from a minute ago so nothing stored before it follows
	// is missed. It finds the stack's NATS by itself, in the data
	// directory, as it finds make run's.
	t.Setenv("VOICEAI_NATS_URL", "")
	t.Setenv("VOICEAI_DATA_DIR", dir)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var tailErr bytes.Buffer // read once done answers
	go func() {
		done <- cli.Run(ctx, []string{"events", "tail", "--json", "--since", "1m"}, pw, &tailErr)
		_ = pw.Close()
	}()
	lines := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not_json": sc.Text()}
			}
			lines <- m
		}
		close(lines)
	}()
	agent := newAgent(t, s, adminKey, "Tail")
	ticket := createTicket(t, s, agent, `{"title":"Tailed","qa_comment":"Seen in the tail."}`).AgentqaTicketID
	deadline := time.After(30 * time.Second)
	for found := false; !found; {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("events tail stopped")
			}
			if m["not_json"] != nil {
				t.Fatalf("events tail --json printed a line that is not JSON: %v", m["not_json"])
			}
			data, _ := m["data"].(map[string]any)
			tk, _ := data["ticket"].(map[string]any)
			found = m["type"] == "tickets.ticket_created" && m["stream"] == "TICKETS" && m["workspace_id"] == "ws_default" && tk["ticket_id"] == ticket
			if found {
				checkAsyncAPIPayload(t, "tickets.ticket_created", data)
			}
		case <-deadline:
			t.Fatal("the ticket's creation was not tailed within 30s")
		}
	}
	cancel()
	if code := <-done; code != cli.ExitOK || strings.Contains(tailErr.String(), "lost the connection") {
		t.Fatalf("events tail exited %d, saying %q (stopping it loses no connection)", code, tailErr.String())
	}

	// webhooks logs --status failed, then resend.
	rcv := newFailableReceiver(t)
	rcv.secret = "whsec_cli_resend_0123456789abcdef"
	hook := createWebhook(t, s, `{"url":"`+rcv.URL+`/cli","secret":"`+rcv.secret+`","events":["call_started"],"retry_config":{"max_retries":0}}`)
	rcv.failing.Store(true)
	eventID := sendCallEvent(t, s, "call_started", "call_cli")
	var delivery string
	eventually(t, 10*time.Second, "the failure is in the log", func() bool {
		code, out, _ := voiceaiCLI(t, s, "webhooks", "logs", hook, "--status", "failed", "--json")
		var page logPage
		if code != cli.ExitOK || json.Unmarshal([]byte(out), &page) != nil || len(page.RecentDeliveries) == 0 {
			return false
		}
		delivery = page.RecentDeliveries[0].DeliveryID
		return page.RecentDeliveries[0].EventID == eventID
	})
	rcv.failing.Store(false)
	code, out, _ := voiceaiCLI(t, s, "webhooks", "resend", hook, delivery)
	if code != cli.ExitOK || !strings.Contains(out, "queued") {
		t.Fatalf("resend: exit %d %s", code, out)
	}
	eventually(t, 10*time.Second, "the resend arrives", func() bool { return len(rcv.deliveries(eventID)) == 2 })
	if code, _, _ := voiceaiCLI(t, s, "webhooks", "resend", hook, "dlv_00000000000000000000000000"); code != cli.ExitError {
		t.Fatalf("resend of an unknown delivery exited %d", code)
	}
	if code, _, _ := voiceaiCLI(t, s, "webhooks", "recover", hook, "--since", "1h"); code != cli.ExitOK {
		t.Fatalf("recover exited %d", code)
	}
}

// checkAsyncAPIPayload validates an event's protobuf JSON against the
// payload schema the AsyncAPI document gives its type.
func checkAsyncAPIPayload(t *testing.T, eventType string, data any) {
	t.Helper()
	b, err := api.AsyncAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Messages map[string]struct {
				Payload struct {
					Ref string `json:"$ref"`
				} `json:"payload"`
			} `json:"messages"`
		} `json:"components"`
	}
	_ = json.Unmarshal(b, &doc)
	ref := doc.Components.Messages[eventType].Payload.Ref
	if ref == "" {
		t.Fatalf("the AsyncAPI document has no message %s", eventType)
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///asyncapi.json", raw); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///asyncapi.json" + ref)
	if err != nil {
		t.Fatalf("compile %s: %v", ref, err)
	}
	if err := sch.Validate(data); err != nil {
		t.Fatalf("a %s event does not match its AsyncAPI payload schema: %v", eventType, err)
	}
}
