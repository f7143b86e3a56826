package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// hookReceiver records every delivery it gets, and answers 503 with a
// message while failing is set.
type hookReceiver struct {
	*httptest.Server
	secret  string
	failing atomic.Bool
	collected[receivedDelivery]
}

type receivedDelivery struct {
	eventID, event string
	body           []byte
	signed         bool
	answered       int
}

func newFailableReceiver(t *testing.T) *hookReceiver {
	rcv := &hookReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		signed := testkit.SignedBy([]byte(rcv.secret), body, r.Header.Get("X-Service-Signature"))
		code := http.StatusOK
		if rcv.failing.Load() {
			code = http.StatusServiceUnavailable
		}
		rcv.add(receivedDelivery{r.Header.Get("X-Service-Event-Id"), r.Header.Get("X-Service-Event"), body, signed, code})
		w.WriteHeader(code)
		if code != http.StatusOK {
			_, _ = w.Write([]byte("down for maintenance"))
		}
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

// deliveries are what the receiver got of an event.
func (r *hookReceiver) deliveries(eventID string) []receivedDelivery {
	var out []receivedDelivery
	for _, d := range r.all() {
		if d.eventID == eventID {
			out = append(out, d)
		}
	}
	return out
}

// receivingHook is a webhook of call_started and call_ended, never
// retried, and the receiver it delivers to.
func receivingHook(t *testing.T, s *Stack) (*hookReceiver, string) {
	t.Helper()
	rcv := newFailableReceiver(t)
	rcv.secret = "whsec_resend_test_secret_0123456789"
	return rcv, createWebhook(t, s, `{"url":"`+rcv.URL+`/hook","secret":"`+rcv.secret+`","events":["call_started","call_ended"],"retry_config":{"max_retries":0}}`)
}

type logPage struct {
	RecentDeliveries []struct {
		EventID      string          `json:"event_id"`
		DeliveryID   string          `json:"delivery_id"`
		Timestamp    string          `json:"timestamp"`
		Status       string          `json:"status"`
		RequestBody  json.RawMessage `json:"request_body"`
		ResponseBody string          `json:"response_body"`
	} `json:"recent_deliveries"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

func hookLog(t *testing.T, s *Stack, id, query string) logPage {
	t.Helper()
	r := call(t, s, "GET", "/v1/voiceai/webhooks/"+id+"/logs?"+query, adminKey, "")
	var out logPage
	if r.Code != 200 || json.Unmarshal(r.Body, &out) != nil {
		t.Fatalf("logs?%s: %d %s", query, r.Code, r.Body)
	}
	return out
}

// A failed delivery is in the log with the body posted and the start of
// the answer; the log filters by event, status and time; a resend posts
// the same bytes with the same event id, once per Idempotency-Key; a
// recover resends each event that failed for good in a range and was not
// delivered since.
func TestWebhookResendRecoverAndLogFilters(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	rcv, hook := receivingHook(t, s)
	failedFor := func(eventID string) string {
		var delivery string
		eventually(t, 10*time.Second, "the failed delivery is logged", func() bool {
			for _, e := range hookLog(t, s, hook, "status=failed").RecentDeliveries {
				if e.EventID == eventID {
					delivery = e.DeliveryID
					return true
				}
			}
			return false
		})
		return delivery
	}

	start := time.Now().Unix()
	rcv.failing.Store(true)
	first := sendCallEvent(t, s, "call_started", "call_1")
	delivery := failedFor(first)

	// The log keeps the body posted and the start of the answer.
	entry := hookLog(t, s, hook, "status=failed&event=call_started").RecentDeliveries[0]
	sent := rcv.deliveries(first)
	if entry.EventID != first || len(sent) != 1 || !bytes.Equal(compactJSON(t, entry.RequestBody), compactJSON(t, sent[0].body)) || entry.ResponseBody != "down for maintenance" {
		t.Fatalf("log entry %+v, delivered %d", entry, len(sent))
	}
	for query, want := range map[string]int{
		"status=success": 0, "event=call_ended": 0, "status=failed&event=call_started": 1,
		"start_time=" + strconv.FormatInt(start+3600, 10): 0, "end_time=" + strconv.FormatInt(start, 10): 0,
		"start_time=" + strconv.FormatInt(start, 10) + "&end_time=" + strconv.FormatInt(start+3600, 10): 1,
	} {
		if got := len(hookLog(t, s, hook, query).RecentDeliveries); got != want {
			t.Errorf("logs?%s: %d entries, want %d", query, got, want)
		}
	}
	if r := call(t, s, "GET", "/v1/voiceai/webhooks/"+hook+"/logs?status=maybe", adminKey, ""); r.Code != 422 {
		t.Fatalf("a bad status filter: %d %s", r.Code, r.Body)
	}

	// Resend: the same bytes and event id, a new delivery, once per key.
	rcv.failing.Store(false)
	resend := "/v1/voiceai/webhooks/" + hook + "/deliveries/" + delivery + "/resend"
	r := call(t, s, "POST", resend, adminKey, "", "Idempotency-Key", "resend-1")
	if r.Code != 202 || r.JSON(t)["event_id"] != first || r.JSON(t)["delivery_id"] == delivery {
		t.Fatalf("resend: %d %s", r.Code, r.Body)
	}
	again := call(t, s, "POST", resend, adminKey, "", "Idempotency-Key", "resend-1")
	if again.Code != 202 || again.JSON(t)["delivery_id"] != r.JSON(t)["delivery_id"] {
		t.Fatalf("resend retried: %d %s, first %s", again.Code, again.Body, r.Body)
	}
	eventually(t, 10*time.Second, "the resend arrives", func() bool { return len(rcv.deliveries(first)) >= 2 })
	got := rcv.deliveries(first)[1]
	if !got.signed || got.event != "call_started" || !bytes.Equal(got.body, sent[0].body) {
		t.Fatalf("resent delivery: %+v", got)
	}
	eventually(t, 10*time.Second, "the resend is logged as a success", func() bool {
		for _, e := range hookLog(t, s, hook, "status=success").RecentDeliveries {
			if e.EventID == first && e.DeliveryID == r.JSON(t)["delivery_id"] {
				return true
			}
		}
		return false
	})
	wantError(t, call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/deliveries/dlv_00000000000000000000000000/resend", adminKey, ""), 404, "delivery_not_found")
	other := createWorkspace(t, s, "Acme")
	wantError(t, call(t, s, "POST", resend, other.APIKey, ""), 404, "webhook_not_found")

	// Recover: the two events that failed since start, not the one
	// delivered by the resend.
	rcv.failing.Store(true)
	second, third := sendCallEvent(t, s, "call_ended", "call_2"), sendCallEvent(t, s, "call_started", "call_3")
	failedFor(second)
	failedFor(third)
	rcv.failing.Store(false)
	r = call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/recover", adminKey, fmt.Sprintf(`{"start_time":%d}`, start))
	if r.Code != 202 || r.JSON(t)["recovered_count"] != float64(2) || r.JSON(t)["has_more"] != false {
		t.Fatalf("recover: %d %s", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the recovered events arrive", func() bool {
		return len(rcv.deliveries(second)) == 2 && len(rcv.deliveries(third)) == 2
	})
	if n := len(rcv.deliveries(first)); n != 2 {
		t.Fatalf("the delivered event was recovered too: %d deliveries", n)
	}
	// The dispatcher logs a success after the receiver has answered: wait
	// for the log, which is what recover reads.
	eventually(t, 10*time.Second, "the recovered deliveries are logged as successes", func() bool {
		n := 0
		for _, e := range hookLog(t, s, hook, "status=success").RecentDeliveries {
			if e.EventID == second || e.EventID == third {
				n++
			}
		}
		return n == 2
	})
	r = call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/recover", adminKey, `{"start_time":`+strconv.FormatInt(start, 10)+`,"event":"call_ended"}`)
	if r.Code != 202 || r.JSON(t)["recovered_count"] != float64(0) {
		t.Fatalf("recover after recovery: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/recover", adminKey, `{}`); r.Code != 422 {
		t.Fatalf("recover without start_time: %d %s", r.Code, r.Body)
	}
}

func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return out.Bytes()
}

// The log and a resend reach past what the API keeps of a webhook in
// memory (its newest 100 attempts): older deliveries are listed, and
// resent, from the durable delivery log in the store.
func TestWebhookLogAndResendReachTheDurableLog(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	rcv, hook := receivingHook(t, s)
	ingest := func(event string, n int) []string {
		var ids []string
		for i := range n {
			ids = append(ids, sendCallEvent(t, s, event, fmt.Sprintf("call_%d", i)))
		}
		eventually(t, 30*time.Second, fmt.Sprintf("%d %s delivered", n, event), func() bool {
			for _, id := range ids {
				if len(rcv.deliveries(id)) == 0 {
					return false
				}
			}
			return true
		})
		return ids
	}
	// 20 call_ended deliveries, then 100 call_started ones, which are
	// all the memory keeps.
	old := ingest("call_ended", 20)
	recent := ingest("call_started", 100)

	// Paged 25 at a time with the cursors, memory's and the durable
	// log's: every delivery once, and a last page that says so.
	eventually(t, 10*time.Second, "every delivery paged through", func() bool {
		var got []string
		query := "limit=25"
		for range 10 {
			page := hookLog(t, s, hook, query)
			for _, e := range page.RecentDeliveries {
				got = append(got, e.EventID)
			}
			if !page.HasMore || page.NextCursor == nil {
				break
			}
			query = "limit=25&cursor=" + url.QueryEscape(*page.NextCursor)
		}
		slices.Sort(got)
		return slices.Equal(got, slices.Sorted(slices.Values(append(slices.Clone(old), recent...))))
	})
	if r := call(t, s, "GET", "/v1/voiceai/webhooks/"+hook+"/logs?cursor=forged", adminKey, ""); r.Code != 422 || !strings.Contains(string(r.Body), `"cursor"`) {
		t.Fatalf("a forged cursor: %d %s", r.Code, r.Body)
	}

	var listed logPage
	eventually(t, 10*time.Second, "the 20 older deliveries listed from the durable log", func() bool {
		listed = hookLog(t, s, hook, "event=call_ended&limit=100")
		return len(listed.RecentDeliveries) == len(old)
	})
	// Each once, newest first (deliveries run side by side, so not
	// necessarily in the order the events were ingested).
	var listedIDs []string
	for i, e := range listed.RecentDeliveries {
		if e.Status != "success" || len(e.RequestBody) == 0 || i > 0 && e.Timestamp > listed.RecentDeliveries[i-1].Timestamp {
			t.Fatalf("entry %d: %+v, after %s", i, e, listed.RecentDeliveries[max(i-1, 0)].Timestamp)
		}
		listedIDs = append(listedIDs, e.EventID)
	}
	slices.Sort(listedIDs)
	if want := slices.Sorted(slices.Values(old)); !slices.Equal(listedIDs, want) {
		t.Fatalf("listed %v; want %v", listedIDs, want)
	}

	oldest := listed.RecentDeliveries[len(old)-1]
	r := call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/deliveries/"+oldest.DeliveryID+"/resend", adminKey, "")
	if r.Code != 202 || r.JSON(t)["event_id"] != oldest.EventID {
		t.Fatalf("resend of the oldest delivery %s: %d %s", oldest.EventID, r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the resend arrives", func() bool { return len(rcv.deliveries(oldest.EventID)) == 2 })
	if sent := rcv.deliveries(oldest.EventID); !sent[1].signed || !bytes.Equal(sent[0].body, sent[1].body) {
		t.Fatalf("resent %+v; first sent %+v", sent[1], sent[0])
	}
}
