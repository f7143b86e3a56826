package stack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks"
)

// signedDelivery is what a receiver got, and which of the three
// signatures verified, each checked as its verifier does (here, by hand,
// independently of the platform's code).
type signedDelivery struct {
	event, eventID, team   string
	service, sdk, standard bool
	timestamp              int64
}

func verifyAll(secret string, r *http.Request, body []byte) signedDelivery {
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	d := signedDelivery{event: r.Header.Get("X-Service-Event"), eventID: r.Header.Get("X-Service-Event-Id"), team: r.Header.Get("X-Team")}
	d.service = testkit.SignedBy([]byte(secret), body, r.Header.Get("X-Service-Signature"))
	// ElevenLabs-Signature: t=<unix>,v0=<hex HMAC of "<t>.<body>">.
	var t, v0 string
	for _, part := range strings.Split(r.Header.Get("ElevenLabs-Signature"), ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			t = v
		}
		if v, ok := strings.CutPrefix(part, "v0="); ok {
			v0 = v
		}
	}
	d.sdk = t != "" && hmac.Equal([]byte(v0), []byte(hex.EncodeToString(mac([]byte(secret), t+"."+string(body)))))
	d.timestamp, _ = strconv.ParseInt(t, 10, 64)
	// Standard Webhooks: keyed by the base64 after whsec_, else by the
	// secret's bytes.
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		key = []byte(secret)
	}
	want := "v1," + base64.StdEncoding.EncodeToString(mac(key, r.Header.Get("Webhook-Id")+"."+r.Header.Get("Webhook-Timestamp")+"."+string(body)))
	d.standard = r.Header.Get("Webhook-Id") == d.eventID && r.Header.Get("Webhook-Timestamp") == t &&
		hmac.Equal([]byte(want), []byte(r.Header.Get("Webhook-Signature")))
	return d
}

// The workspace webhooks API (the official SDK's client.webhooks) through
// the gateway: one store with /v1/convai/webhooks (made one way, seen the
// other), a generated secret shown once that signs each delivery three
// ways, request headers sent along, permissions, and hostile headers
// refused with 422.
func TestWorkspaceWebhooks(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	var mu sync.Mutex // guards secret, known once the webhook is created
	var secret string
	var got collected[signedDelivery]
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		key := secret
		mu.Unlock()
		got.add(verifyAll(key, r, body))
	}))
	t.Cleanup(rcv.Close)
	reader, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
	writer, _, _ := newKey(t, s, adminKey, `["webhooks_write"]`, "")

	create := `{"settings":{"auth_type":"hmac","name":"QA tooling","webhook_url":"` + rcv.URL + `/hook","request_headers":{"X-Team":"qa"}}}`
	wantError(t, call(t, s, "POST", "/v1/workspace/webhooks", reader, create), 403, "missing_permission")
	r := call(t, s, "POST", "/v1/workspace/webhooks", writer, create)
	if r.Code != 200 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	id, _ := r.JSON(t)["webhook_id"].(string)
	mu.Lock()
	secret, _ = r.JSON(t)["webhook_secret"].(string)
	mu.Unlock()
	if !strings.HasPrefix(secret, "whsec_") || id == "" {
		t.Fatalf("created: %s", r.Body)
	}
	// Seen both ways, the secret never again.
	r = call(t, s, "GET", "/v1/workspace/webhooks?include_usages=true", reader, "")
	if r.Code != 200 || !strings.Contains(string(r.Body), `"webhook_id":"`+id+`"`) || strings.Contains(string(r.Body), secret) ||
		!strings.Contains(string(r.Body), `"events":["agent_qa"]`) || !strings.Contains(string(r.Body), `"usage_type":"Agent QA Evaluations"`) {
		t.Fatalf("workspace list: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/webhooks/"+id, reader, "")
	if r.Code != 200 || r.JSON(t)["name"] != "QA tooling" || !strings.Contains(string(r.Body), `"request_headers":{"X-Team":"********"}`) ||
		!strings.Contains(string(r.Body), `"ticket_created"`) || strings.Contains(string(r.Body), secret) {
		t.Fatalf("convai get: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "POST", "/v1/convai/webhooks", writer, `{"url":"`+rcv.URL+`/other","events":["call_started"],"request_headers":{"Host":"evil.example"}}`)
	if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","request_headers","Host"]`) {
		t.Fatalf("convai create with a Host header: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "POST", "/v1/convai/webhooks", writer, `{"url":"`+rcv.URL+`/other","events":["call_started"],"name":"Calls"}`)
	if r.Code != 201 {
		t.Fatalf("convai create: %d %s", r.Code, r.Body)
	}
	other := r.JSON(t)["webhook_id"].(string)
	if r := call(t, s, "GET", "/v1/workspace/webhooks", reader, ""); !strings.Contains(string(r.Body), `"name":"Calls","webhook_id":"`+other+`"`) ||
		!strings.Contains(string(r.Body), `"webhook_id":"`+other+`","webhook_url":"`+rcv.URL+`/other"`) {
		t.Fatalf("a convai webhook missing from the workspace list: %s", r.Body)
	}

	// A ticket's creation (agent_qa) reaches it, signed three ways with
	// the attempt's time, with its request header.
	agent := newAgent(t, s, adminKey, "Support")
	createTicket(t, s, agent, `{"qa_comment":"wrong answer"}`)
	d := got.await(t, 10*time.Second, "the ticket_created delivery", 1)[0]
	if d.event != "ticket_created" || !d.service || !d.sdk || !d.standard || d.team != "qa" || time.Since(time.Unix(d.timestamp, 0)).Abs() > time.Minute {
		t.Fatalf("delivery: %+v", d)
	}
	// A header's value is shown hidden (it may be the receiver's
	// credential); sent back as shown, it keeps the stored value.
	if r := call(t, s, "PATCH", "/v1/workspace/webhooks/"+id, writer, `{"is_disabled":false,"name":"QA tooling","request_headers":{"X-Team":"********"}}`); r.Code != 200 {
		t.Fatalf("patch with the hidden value: %d %s", r.Code, r.Body)
	}
	createTicket(t, s, agent, `{"qa_comment":"wrong again"}`)
	created := func() (n int) {
		for _, d := range got.all() {
			if d.event == "ticket_created" {
				n++
			}
		}
		return n
	}
	eventually(t, 10*time.Second, "the second ticket_created delivery", func() bool { return created() >= 2 })
	for _, d := range got.all() {
		if d.team != "qa" {
			t.Fatalf("the hidden value sent back was not kept: %+v", d)
		}
	}

	// Update: rename, disable (seen as inactive the convai way), enable.
	patch := func(body string) response { return call(t, s, "PATCH", "/v1/workspace/webhooks/"+id, writer, body) }
	if r := patch(`{"is_disabled":true,"name":"QA (paused)","retry_enabled":false}`); r.Code != 200 || r.JSON(t)["status"] != "ok" {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/webhooks/"+id, reader, "")
	if j := r.JSON(t); j["active"] != false || j["name"] != "QA (paused)" || j["is_auto_disabled"] != false || !strings.Contains(string(r.Body), `"max_retries":0`) {
		t.Fatalf("after patch: %s", r.Body)
	}
	if r := call(t, s, "GET", "/v1/workspace/webhooks", reader, ""); !strings.Contains(string(r.Body), `"is_disabled":true`) {
		t.Fatalf("not disabled in the workspace list: %s", r.Body)
	}
	if r := patch(`{"is_disabled":false,"name":"QA","events":[],"request_headers":{"X-Team":null,"X-Env":"staging"}}`); r.Code != 200 {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/webhooks/"+id, reader, "")
	if j := r.JSON(t); j["active"] != true || strings.Contains(string(r.Body), "ticket_created") || !strings.Contains(string(r.Body), `"request_headers":{"X-Env":"********"}`) {
		t.Fatalf("after the second patch: %s", r.Body)
	}
	// Subscribed to nothing, as the workspace API left it: written back
	// the convai way as it reads.
	if r := call(t, s, "PUT", "/v1/convai/webhooks/"+id, writer, `{"events":[],"active":true}`); r.Code != 200 {
		t.Fatalf("its events written back: %d %s", r.Code, r.Body)
	}

	// Hostile request headers, and what the SDK's types do not allow: 422
	// in the spec's shape, on create and on update.
	for name, headers := range map[string]string{
		"content type":        `{"Content-Type":"text/plain"}`,
		"host":                `{"Host":"evil.example"}`,
		"platform signature":  `{"X-Service-Signature":"sha256=00"}`,
		"sdk signature":       `{"ElevenLabs-Signature":"t=1,v0=00"}`,
		"standard signature":  `{"Webhook-Signature":"v1,AA=="}`,
		"CR LF":               `{"X-A":"a\r\nX-Injected: 1"}`,
		"LF":                  `{"X-A":"a\nb"}`,
		"not a token":         `{"X A":"1"}`,
		"oversize":            `{"X-A":"` + strings.Repeat("a", 1025) + `"}`,
		"too many":            manyHeadersJSON(21),
		"a number":            `{"X-A":1}`,
		"hidden, none stored": `{"X-New":"********"}`,
	} {
		r := call(t, s, "POST", "/v1/workspace/webhooks", writer, `{"settings":{"auth_type":"hmac","name":"x","webhook_url":"`+rcv.URL+`","request_headers":`+headers+`}}`)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","settings","request_headers"`) {
			t.Errorf("create with %s: %d %s", name, r.Code, r.Body)
		}
		if r := patch(`{"is_disabled":false,"name":"QA","request_headers":` + headers + `}`); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","request_headers"`) {
			t.Errorf("update with %s: %d %s", name, r.Code, r.Body)
		}
	}
	for name, body := range map[string]string{
		"oauth2":        `{"settings":{"auth_type":"oauth2","name":"x","webhook_url":"` + rcv.URL + `"}}`,
		"no url":        `{"settings":{"auth_type":"hmac","name":"x"}}`,
		"a private url": `{"settings":{"auth_type":"hmac","name":"x","webhook_url":"https://10.0.0.1/h"}}`,
		"credentials":   `{"settings":{"auth_type":"hmac","name":"x","webhook_url":"https://user:secret@hooks.example.com/h"}}`,
		"no settings":   `{}`,
		"malformed":     `{"settings":`,
	} {
		if r := call(t, s, "POST", "/v1/workspace/webhooks", writer, body); r.Code != 422 && r.Code != 400 {
			t.Errorf("create with %s: %d %s", name, r.Code, r.Body)
		}
	}
	// A url refused is named as the body names it.
	for _, url := range []string{"https://10.0.0.1/h", "https://user:secret@hooks.example.com/h"} {
		r := call(t, s, "POST", "/v1/workspace/webhooks", writer, `{"settings":{"auth_type":"hmac","name":"x","webhook_url":"`+url+`"}}`)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","settings","webhook_url"]`) {
			t.Errorf("create with %s: %d %s", url, r.Code, r.Body)
		}
	}
	if r := patch(`{"is_disabled":false,"name":"QA","events":["speech_to_text"]}`); r.Code != 422 {
		t.Errorf("an event type not produced here: %d %s", r.Code, r.Body)
	}
	if r := patch(`{"name":"QA"}`); r.Code != 422 {
		t.Errorf("is_disabled missing: %d %s", r.Code, r.Body)
	}

	// Delete: gone both ways; another workspace's id is 404.
	if r := call(t, s, "DELETE", "/v1/workspace/webhooks/"+id, writer, ""); r.Code != 200 || r.JSON(t)["status"] != "ok" {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "GET", "/v1/convai/webhooks/"+id, reader, ""), 404, "webhook_not_found")
	wantError(t, call(t, s, "DELETE", "/v1/workspace/webhooks/"+id, writer, ""), 404, "webhook_not_found")
}

// A workspace's webhooks are bounded (VOICEAI_WEBHOOK_MAX_PER_WORKSPACE,
// 2 here), both ways of creating one counted: one more is a 409 in the
// error shape and is not listed; a delete makes room again.
func TestWebhooksPerWorkspaceAreBounded(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks, func(c *Config) { c.WebhookMaxPerWorkspace = 2 })
	convai := `{"url":"https://hooks.example.com/qa","events":["call_started"]}`
	workspace := `{"settings":{"auth_type":"hmac","name":"QA","webhook_url":"https://hooks.example.com/qa"}}`
	r := call(t, s, "POST", "/v1/convai/webhooks", adminKey, convai)
	if r.Code != 201 {
		t.Fatalf("first: %d %s", r.Code, r.Body)
	}
	first, _ := r.JSON(t)["webhook_id"].(string)
	if r := call(t, s, "POST", "/v1/workspace/webhooks", adminKey, workspace); r.Code != 200 {
		t.Fatalf("second: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "POST", "/v1/convai/webhooks", adminKey, convai), 409, "workspace_limit_reached")
	wantError(t, call(t, s, "POST", "/v1/workspace/webhooks", adminKey, workspace), 409, "workspace_limit_reached")
	if r := call(t, s, "GET", "/v1/convai/webhooks", adminKey, ""); r.Code != 200 || len(r.JSON(t)["data"].([]any)) != 2 {
		t.Fatalf("listed after the refusals: %d %s", r.Code, r.Body)
	}
	// A page at a time (the spec's limit and cursor), oldest first.
	page1 := call(t, s, "GET", "/v1/convai/webhooks?limit=1", adminKey, "").JSON(t)
	p1 := page1["pagination"].(map[string]any)
	next, _ := p1["next_cursor"].(string)
	if len(page1["data"].([]any)) != 1 || p1["has_more"] != true || next == "" || p1["total_count"] != float64(2) {
		t.Fatalf("a first page of 1: %v", page1)
	}
	page2 := call(t, s, "GET", "/v1/convai/webhooks?limit=1&cursor="+url.QueryEscape(next), adminKey, "").JSON(t)
	p2 := page2["pagination"].(map[string]any)
	idOf := func(page map[string]any) any { return page["data"].([]any)[0].(map[string]any)["webhook_id"] }
	if len(page2["data"].([]any)) != 1 || p2["has_more"] != false || p2["next_cursor"] != nil || idOf(page1) != first || idOf(page2) == first {
		t.Fatalf("the second page: %v after %v", page2, page1)
	}
	if r := call(t, s, "GET", "/v1/convai/webhooks?cursor=abc", adminKey, ""); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["query","cursor"]`) {
		t.Errorf("a forged cursor: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "DELETE", "/v1/convai/webhooks/"+first, adminKey, ""); r.Code != 204 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/webhooks", adminKey, convai); r.Code != 201 {
		t.Fatalf("after a delete: %d %s", r.Code, r.Body)
	}
}

func manyHeadersJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"X-H%d":"1"`, i)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Auto-disable through the gateway: a receiver that answers 500 to
// everything is disabled after the threshold (3 here), shown both ways;
// no further attempt reaches it; enabled again, new events are delivered
// and recover replays the deliveries that failed.
func TestWebhookAutoDisabled(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks, func(c *Config) {
		c.WebhookAutoDisable = webhooks.AutoDisableEnv{Failures: 3, Over: 0}
	})
	var hits, fine, unsigned atomic.Int32
	var healthy atomic.Bool
	var secret atomic.Value
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every attempt, first ones and recovered ones, is signed three ways.
		body, _ := io.ReadAll(r.Body)
		if d := verifyAll(secret.Load().(string), r, body); !d.service || !d.sdk || !d.standard {
			unsigned.Add(1)
		}
		hits.Add(1)
		if !healthy.Load() {
			w.WriteHeader(500)
		}
	}))
	t.Cleanup(dead.Close)
	alive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fine.Add(1) }))
	t.Cleanup(alive.Close)
	start := time.Now().Add(-time.Second).Unix()
	r := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"url":"`+dead.URL+`/hook","events":["call_started"],"retry_config":{"max_retries":0}}`)
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	id := r.JSON(t)["webhook_id"].(string)
	secret.Store(r.JSON(t)["secret"].(string))
	for i := range 3 {
		sendCallEvent(t, s, "call_started", fmt.Sprint("c", i))
	}
	eventually(t, 15*time.Second, "the webhook auto-disabled", func() bool {
		return call(t, s, "GET", "/v1/convai/webhooks/"+id, adminKey, "").JSON(t)["is_auto_disabled"] == true
	})
	j := call(t, s, "GET", "/v1/convai/webhooks/"+id, adminKey, "").JSON(t)
	if j["active"] != false || j["disabled_reason"] != "failing" || j["most_recent_failure_error_code"] != float64(500) || j["most_recent_failure_timestamp"] == nil {
		t.Fatalf("convai view: %v", j)
	}
	r = call(t, s, "GET", "/v1/workspace/webhooks", adminKey, "")
	if !strings.Contains(string(r.Body), `"is_auto_disabled":true`) || !strings.Contains(string(r.Body), `"is_disabled":false`) || !strings.Contains(string(r.Body), `"most_recent_failure_error_code":500`) {
		t.Fatalf("workspace view: %s", r.Body)
	}
	if n := hits.Load(); n != 3 {
		t.Fatalf("%d attempts before the disable, want 3", n)
	}

	// Nothing more is queued for it: a webhook on a live receiver gets the
	// next event (the fan-out handled it), the dead one nothing.
	if r := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"url":"`+alive.URL+`/hook","events":["call_started"]}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	sendCallEvent(t, s, "call_started", "c3")
	eventually(t, 10*time.Second, "the live webhook's delivery", func() bool { return fine.Load() == 1 })
	if n := hits.Load(); n != 3 {
		t.Fatalf("a disabled webhook's receiver was reached: %d attempts", n)
	}
	if r := call(t, s, "GET", "/v1/voiceai/webhooks/health", adminKey, ""); !strings.Contains(string(r.Body), `"webhook_id":"`+id+`"`) || !strings.Contains(string(r.Body), `"backlog":0`) {
		t.Fatalf("health: %s", r.Body)
	}

	// The event it missed is in its delivery log, not sent.
	eventually(t, 10*time.Second, "the missed event logged", func() bool {
		return strings.Contains(string(call(t, s, "GET", "/v1/voiceai/webhooks/"+id+"/logs", adminKey, "").Body), "not sent: the webhook was disabled")
	})

	// Enabled again (the SDK's way): new events arrive, and recover replays
	// the three that failed and the one it missed.
	healthy.Store(true)
	if r := call(t, s, "PATCH", "/v1/workspace/webhooks/"+id, adminKey, `{"is_disabled":false,"name":""}`); r.Code != 200 {
		t.Fatalf("enable: %d %s", r.Code, r.Body)
	}
	if j := call(t, s, "GET", "/v1/convai/webhooks/"+id, adminKey, "").JSON(t); j["active"] != true || j["is_auto_disabled"] != false || j["consecutive_failures"] != float64(0) {
		t.Fatalf("enabled: %v", j)
	}
	sendCallEvent(t, s, "call_started", "c4")
	eventually(t, 10*time.Second, "a new event delivered", func() bool { return hits.Load() == 4 })
	r = call(t, s, "POST", "/v1/voiceai/webhooks/"+id+"/recover", adminKey, fmt.Sprintf(`{"start_time":%d}`, start))
	if r.Code != 202 || r.JSON(t)["recovered_count"] != float64(4) {
		t.Fatalf("recover: %d %s", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the failed and missed deliveries replayed", func() bool { return hits.Load() == 8 })
	if n := unsigned.Load(); n != 0 {
		t.Fatalf("%d deliveries not signed every way", n)
	}
}
