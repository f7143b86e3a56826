package stack

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/natsx"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A gateway replica stopping (a rolling update) while a client's relay
// poll waits through it answers the poll at once, 503 with Retry-After
// (poll again: another replica answers), and its drain ends with it,
// where it waited out the poll's 20 s past its own 15 s drain and the
// client got no answer at all.
func TestAStoppingGatewayAnswersItsPollsAtOnce(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	hook := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"relay":true,"events":["call_ended"]}`).JSON(t)["webhook_id"].(string)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, served := runGateway(ctx, t, s, TestConfig(t.TempDir(), nil))
	nc := testenv.ConnAt(t, s.NATSURL)
	// Every request the gateway sends the webhooks service passes here
	// too (a plain subscriber beside the service's queue group).
	forwarded, err := nc.SubscribeSync(natsx.Subject("webhooks"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the server has the subscription
		t.Fatal(err)
	}
	type answer struct {
		code  int
		retry string
		body  string
		err   error
	}
	polled := make(chan answer, 1)
	go func() {
		req, err := testkit.APIRequest(context.Background(), "POST", "http://"+addr+"/v1/voiceai/webhooks/"+hook+"/relay/next", adminKey, `{"wait_ms":20000}`)
		if err != nil {
			polled <- answer{err: err}
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			polled <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		polled <- answer{code: resp.StatusCode, retry: resp.Header.Get("Retry-After"), body: string(b)}
	}()
	for {
		msg, err := forwarded.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("the poll never reached the webhooks service: %v", err)
		}
		if strings.Contains(msg.Header.Get("Voiceai-Http-Uri"), "/relay/next") {
			break
		}
	}
	stop()
	select {
	case r := <-polled:
		if r.err != nil || r.code != http.StatusServiceUnavailable || r.retry == "" || !strings.Contains(r.body, "stopping") {
			t.Fatalf("the poll through the stopping gateway: %d (Retry-After %q) %s %v", r.code, r.retry, r.body, r.err)
		}
	case <-time.After(12 * time.Second):
		t.Fatal("the poll waited on after its gateway began to stop")
	}
	if err := <-served; err != nil {
		t.Fatalf("the gateway's drain: %v", err)
	}
}

// With VOICEAI_SHUTDOWN_DELAY, a stopping gateway says it is not ready at
// once (a load balancer sends no more) and serves on through the delay:
// no request is refused, and no connection is left in the listener's
// queue for the kernel to reset when it closes.
func TestAStoppingGatewayServesThroughItsDelayNotReady(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	cfg := TestConfig(t.TempDir(), nil)
	cfg.Config.ShutdownDelay = 5 * time.Second
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, served := runGateway(ctx, t, s, cfg)
	replica := &Stack{Addr: addr, NATSURL: s.NATSURL}
	if r := call(t, replica, "GET", "/readyz", "", ""); r.Code != http.StatusOK {
		t.Fatalf("/readyz before stopping: %d %s", r.Code, r.Body)
	}
	stop()
	testkit.Eventually(t, 5*time.Second, "/readyz failing", func() bool {
		return call(t, replica, "GET", "/readyz", "", "").Code == http.StatusServiceUnavailable
	})
	if r := call(t, replica, "GET", "/v1/convai/agents", adminKey, ""); r.Code != http.StatusOK {
		t.Fatalf("a request during the delay: %d %s", r.Code, r.Body)
	}
	if err := <-served; err != nil {
		t.Fatalf("the gateway's stop: %v", err)
	}
}
