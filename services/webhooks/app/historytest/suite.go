// Package historytest is the conformance suite of the durable delivery
// log (app.DeliveryHistory): every implementation (in memory, the pages
// in Mongo) lists the same attempts newest first through the same
// filters, keeps an attempt stored twice once, however the batches that
// stored them were cut, and finds a delivery's first attempt.
package historytest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Opener opens a history over fresh storage, and what stores a batch of
// attempts in it as the copy from the attempts stream does: one call per
// batch, in the order the stream holds them.
type Opener func(t *testing.T) (h app.DeliveryHistory, store func(batch ...*webhooksv1.DeliveryAttempt))

const t0 = 1_800_000_000_000 // ms

// attempt is attempt retry+1 of delivering event n to webhookID, made at
// t0 + n seconds + retry ms; even events succeed.
func attempt(webhookID string, n, retry int) *webhooksv1.DeliveryAttempt {
	a := &webhooksv1.DeliveryAttempt{
		AttemptId: fmt.Sprintf("evt_%03d:%s:%d", n, webhookID, retry+1), EventId: fmt.Sprintf("evt_%03d", n), WorkspaceId: "ws_a",
		WebhookId: webhookID, Event: []string{"ticket_created", "call_ended"}[n%3%2], AtUnixMs: t0 + int64(n)*1000 + int64(retry),
		Success: n%2 == 0, ResponseCode: 200, RetryCount: int32(retry), Final: true,
	}
	if !a.Success {
		a.ResponseCode = 500
	}
	if retry == 0 {
		a.RequestBody = fmt.Appendf(nil, `{"event":%q,"n":%d}`, a.Event, n)
	}
	return a
}

func attempts(webhookID string, from, to int) []*webhooksv1.DeliveryAttempt {
	var out []*webhooksv1.DeliveryAttempt
	for n := from; n < to; n++ {
		out = append(out, attempt(webhookID, n, 0))
	}
	return out
}

func ids(as []*webhooksv1.DeliveryAttempt) []string {
	return testkit.IDs(as, (*webhooksv1.DeliveryAttempt).GetAttemptId)
}

// want is what a history of all must list for older(f, before, limit).
func want(all []*webhooksv1.DeliveryAttempt, webhookID string, f domain.LogFilter, beforeMs int64, limit int) []string {
	var out []*webhooksv1.DeliveryAttempt
	for _, a := range all {
		if a.GetWebhookId() == webhookID && (beforeMs == 0 || a.GetAtUnixMs() < beforeMs) && f.Matches(a.GetEvent(), a.GetSuccess(), a.GetAtUnixMs()) &&
			!slices.ContainsFunc(out, func(x *webhooksv1.DeliveryAttempt) bool { return x.GetAttemptId() == a.GetAttemptId() }) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, app.NewestFirst)
	return ids(out[:min(len(out), limit)])
}

func older(t *testing.T, h app.DeliveryHistory, webhookID string, f domain.LogFilter, beforeMs int64, limit int) []string {
	t.Helper()
	var before *app.LogPosition
	if beforeMs != 0 {
		before = &app.LogPosition{AtMs: beforeMs}
	}
	got, err := h.Older(context.Background(), webhookID, f, before, limit)
	if err != nil {
		t.Fatal(err)
	}
	return ids(got)
}

// query is a call of Older the suite checks.
type query struct {
	name   string
	f      domain.LogFilter
	before int64
	limit  int
}

// listsAsAll checks that h lists whk_1's attempts as a history of all
// does, for each query.
func listsAsAll(t *testing.T, h app.DeliveryHistory, all []*webhooksv1.DeliveryAttempt, queries []query) {
	t.Helper()
	for _, q := range queries {
		if got, want := older(t, h, "whk_1", q.f, q.before, q.limit), want(all, "whk_1", q.f, q.before, q.limit); !slices.Equal(got, want) {
			t.Errorf("%s: %v; want %v", q.name, got, want)
		}
	}
}

// pagesBackThroughAll checks that paging back through whk_1's log, as the
// logs endpoint does past what memory holds, pageSize at a time, reaches
// every attempt once, newest first.
func pagesBackThroughAll(t *testing.T, h app.DeliveryHistory, all []*webhooksv1.DeliveryAttempt, pageSize int) {
	t.Helper()
	var paged []string
	var before *app.LogPosition
	for range len(all) {
		page, err := h.Older(context.Background(), "whk_1", domain.LogFilter{}, before, pageSize)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, ids(page)...)
		last := app.PositionOf(page[len(page)-1])
		before = &last
	}
	if want := want(all, "whk_1", domain.LogFilter{}, 0, len(all)); !slices.Equal(paged, want) {
		t.Errorf("paged back %d at a time: %v; want %v", pageSize, paged, want)
	}
}

// Run checks open against what app.DeliveryHistory promises.
func Run(t *testing.T, open Opener) {
	t.Run("older is newest first, filtered, limited and before a time", func(t *testing.T) {
		h, store := open(t)
		all := append(attempts("whk_1", 0, 40), attempts("whk_2", 0, 10)...)
		store(all...)
		listsAsAll(t, h, all, []query{
			{"all", domain.LogFilter{}, 0, 100},
			{"limited", domain.LogFilter{}, 0, 7},
			{"before", domain.LogFilter{}, t0 + 20_000, 5},
			{"failed", domain.LogFilter{Status: domain.LogFailed}, 0, 100},
			{"succeeded", domain.LogFilter{Status: domain.LogSuccess}, 0, 3},
			{"one event", domain.LogFilter{Event: "call_ended"}, 0, 100},
			{"a window", domain.LogFilter{FromMs: t0 + 10_000, ToMs: t0 + 15_000}, 0, 100},
			{"a window and before", domain.LogFilter{FromMs: t0 + 10_000, ToMs: t0 + 30_000}, t0 + 12_000, 100},
			{"nothing selected", domain.LogFilter{Event: "call_started"}, 0, 100},
		})
		if got := older(t, h, "whk_3", domain.LogFilter{}, 0, 100); len(got) != 0 {
			t.Errorf("a webhook with no attempts lists %v", got)
		}
	})

	t.Run("batches cut anyhow, stored out of order or twice, list each attempt once in time order", func(t *testing.T) {
		h, store := open(t)
		var all []*webhooksv1.DeliveryAttempt
		for n := range 60 {
			all = append(all, attempt("whk_1", n, 0))
			if n%4 == 1 {
				all = append(all, attempt("whk_1", n, 1))
			}
		}
		// Late records: every batch holds attempts from both ends of
		// the time line, and the batches after the third repeat the
		// ones before (a redelivery cut at other bounds).
		mixed := slices.Clone(all)
		for i := 0; i < len(mixed)/2; i += 2 {
			mixed[i], mixed[len(mixed)-1-i] = mixed[len(mixed)-1-i], mixed[i]
		}
		store(mixed[:25]...)
		store(mixed[25:50]...)
		store(mixed[50:]...)
		store(mixed[10:40]...)
		store(mixed[:1]...)
		listsAsAll(t, h, all, []query{
			{"limit 1", domain.LogFilter{}, 0, 1},
			{"limit 5", domain.LogFilter{}, 0, 5},
			{"limit 30", domain.LogFilter{}, 0, 30},
			{"limit 100", domain.LogFilter{}, 0, 100},
		})
		pagesBackThroughAll(t, h, all, 7)
	})

	t.Run("a long log of small batches: rare outcomes, deep pages and old deliveries are found", func(t *testing.T) {
		h, store := open(t)
		var all []*webhooksv1.DeliveryAttempt
		for n := range 300 {
			a := attempt("whk_1", n, 0)
			a.Success = n%97 != 5 // four failures: 5, 102, 199, 296
			all = append(all, a)
		}
		other := attempts("whk_2", 0, 10)
		for i := 0; i < len(all); i += 2 {
			store(all[i : i+2]...)
			if i%30 == 0 {
				store(other[i/30])
			}
		}
		listsAsAll(t, h, all, []query{
			{"newest", domain.LogFilter{}, 0, 50},
			{"the rare failures", domain.LogFilter{Status: domain.LogFailed}, 0, 100},
			{"one rare failure before a time", domain.LogFilter{Status: domain.LogFailed}, t0 + 200_000, 1},
			{"deep back", domain.LogFilter{}, t0 + 9_000, 5},
			{"a window far back", domain.LogFilter{FromMs: t0 + 30_000, ToMs: t0 + 40_000}, 0, 100},
			{"one event, failed", domain.LogFilter{Event: "call_ended", Status: domain.LogFailed}, 0, 100},
		})
		pagesBackThroughAll(t, h, all, 40)
		for _, a := range []*webhooksv1.DeliveryAttempt{all[0], all[151], all[299], other[0]} {
			got, err := h.FirstAttempt(context.Background(), a.GetWebhookId(), app.DeliveryID(a))
			if err != nil || got.GetAttemptId() != a.GetAttemptId() {
				t.Errorf("first attempt of %s: %v %v", a.GetAttemptId(), got, err)
			}
		}
	})

	t.Run("positions step between attempts of one millisecond", func(t *testing.T) {
		h, store := open(t)
		var all []*webhooksv1.DeliveryAttempt
		for n := range 40 {
			a := attempt("whk_1", n, 0)
			a.AtUnixMs = t0 + int64(n/20) // 20 a millisecond
			all = append(all, a)
		}
		store(all[:25]...)
		store(all[25:]...)
		slices.SortFunc(all, app.NewestFirst)
		at := app.PositionOf(all[5])
		got, err := h.Older(context.Background(), "whk_1", domain.LogFilter{}, &at, 3)
		if err != nil || !slices.Equal(ids(got), ids(all[6:9])) {
			t.Errorf("below %v: %v %v; want %v", at, ids(got), err, ids(all[6:9]))
		}
		pagesBackThroughAll(t, h, all, 7)
	})

	t.Run("a delivery's first attempt is found by its delivery id", func(t *testing.T) {
		h, store := open(t)
		first, retry := attempt("whk_1", 7, 0), attempt("whk_1", 7, 1)
		resent := attempt("whk_1", 7, 0)
		resent.AttemptId, resent.ResendId, resent.RequestBody = "evt_007:whk_1:rsd_1:1", "rsd_1", []byte(`{"resent":true}`)
		other := attempt("whk_2", 7, 0)
		// A delivery whose first attempt was never recorded: its final
		// one, which carries the body, is what is found.
		unbodied, final := attempt("whk_1", 9, 1), attempt("whk_1", 9, 2)
		final.RequestBody = []byte(`{"final":true}`)
		store(append(attempts("whk_1", 0, 7), retry, other, unbodied)...)
		store(first, resent, final)
		for _, c := range []struct {
			name, webhookID string
			of              *webhooksv1.DeliveryAttempt
			want            *webhooksv1.DeliveryAttempt
		}{
			{"the first delivery", "whk_1", first, first},
			{"a resend", "whk_1", resent, resent},
			{"another webhook's", "whk_2", other, other},
			{"a delivery whose first attempt was not recorded", "whk_1", unbodied, final},
			{"asked of the wrong webhook", "whk_2", first, nil},
		} {
			got, err := h.FirstAttempt(context.Background(), c.webhookID, app.DeliveryID(c.of))
			if err != nil {
				t.Fatal(err)
			}
			if got.GetAttemptId() != c.want.GetAttemptId() || string(got.GetRequestBody()) != string(c.want.GetRequestBody()) {
				t.Errorf("%s: %v; want %v", c.name, got, c.want)
			}
		}
		if got, err := h.FirstAttempt(context.Background(), "whk_1", "dlv_unknown"); got != nil || err != nil {
			t.Errorf("unknown delivery: %v %v", got, err)
		}
	})
}
