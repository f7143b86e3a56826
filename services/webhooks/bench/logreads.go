package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Durable log reads: what the logs endpoint reads past the attempts kept
// in memory (the newest, a page further back, a rare outcome) and what a
// resend of an old delivery reads, on the embedded store, with the log of
// 20 webhooks at 6,000 and then 60,000 attempts (two a page, as light
// traffic stores them). The baseline is one query on anything but _id,
// which the embedded store answers by reading the whole collection: what
// every such read cost before the page index. A read that costs the page
// takes a small part of it, and about as long at both sizes.
const (
	logHooks    = 20
	logPerPage  = 2
	logSmall    = 6_000
	logLarge    = 60_000
	logReadsRun = 7
)

func durableLogReads(ctx context.Context, uri string) error {
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer client.Disconnect(ctx)
	db := client.Database("bench_delivery_log")
	log, err := adapters.OpenAttemptPages(ctx, db)
	if err != nil {
		return err
	}
	const t0 = 1_800_000_000_000
	attempt := func(i int) *webhooksv1.DeliveryAttempt {
		return &webhooksv1.DeliveryAttempt{
			AttemptId: fmt.Sprintf("evt_%06d:whk_%02d:1", i, i%logHooks), EventId: fmt.Sprintf("evt_%06d", i), WorkspaceId: "ws_log",
			WebhookId: fmt.Sprintf("whk_%02d", i%logHooks), Event: "call_ended", AtUnixMs: t0 + int64(i), Success: i%5000 != 0, Final: true,
			ResponseCode: 200, RequestBody: []byte(`{"event":"call_ended","data":{"conversation_id":"conv_0123456789"}}`),
		}
	}
	store := func(from, to int) error {
		const batch = logHooks * logPerPage
		for i := from; i < to; i += batch {
			as := make([]*webhooksv1.DeliveryAttempt, 0, batch)
			for j := i; j < min(i+batch, to); j++ {
				as = append(as, attempt(j))
			}
			if err := log.Store(ctx, as); err != nil {
				return err
			}
		}
		return nil
	}
	// timedMedian is the median of logReadsRun runs; next readies each
	// (untimed) and returns the read to time.
	timedMedian := func(next func() (func() error, error)) (time.Duration, error) {
		var took []time.Duration
		for range logReadsRun {
			read, err := next()
			if err != nil {
				return 0, err
			}
			start := time.Now()
			if err := read(); err != nil {
				return 0, err
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[len(took)/2], nil
	}
	median := func(read func() error) (time.Duration, error) {
		return timedMedian(func() (func() error, error) { return read, nil })
	}
	// Each read is measured cold: on a log opened afresh, which keeps
	// nothing of the reads before (a process keeps the summaries and
	// pages its reads found: see paging below).
	coldMedian := func(read func(log *adapters.AttemptPages) error) (time.Duration, error) {
		return timedMedian(func() (func() error, error) {
			fresh, err := adapters.OpenAttemptPages(ctx, db)
			return func() error { return read(fresh) }, err
		})
	}
	type read struct {
		name string
		do   func(log *adapters.AttemptPages, size int) error
	}
	expect := func(got []*webhooksv1.DeliveryAttempt, err error, want int) error {
		if err == nil && len(got) != want {
			err = fmt.Errorf("%d attempts; want %d", len(got), want)
		}
		return err
	}
	reads := []read{
		{"the newest 50", func(log *adapters.AttemptPages, _ int) error {
			got, err := log.Older(ctx, "whk_00", domain.LogFilter{}, nil, 50)
			return expect(got, err, 50)
		}},
		{"50 from the middle back", func(log *adapters.AttemptPages, size int) error {
			got, err := log.Older(ctx, "whk_00", domain.LogFilter{}, &app.LogPosition{AtMs: t0 + int64(size/2)}, 50)
			return expect(got, err, 50)
		}},
		{"the newest failure", func(log *adapters.AttemptPages, _ int) error {
			got, err := log.Older(ctx, "whk_00", domain.LogFilter{Status: domain.LogFailed}, nil, 1)
			return expect(got, err, 1)
		}},
		{"the first delivery's first attempt", func(log *adapters.AttemptPages, _ int) error {
			got, err := log.FirstAttempt(ctx, "whk_00", app.DeliveryID(attempt(0)))
			if err == nil && got == nil {
				err = fmt.Errorf("not found")
			}
			return err
		}},
	}
	lookup := func(filter bson.D) func() error {
		return func() error {
			if err := db.Collection("attempt_page_index").FindOne(ctx, filter).Err(); err != mongo.ErrNoDocuments {
				return err
			}
			return nil
		}
	}
	measure := func(size int) ([]time.Duration, time.Duration, error) {
		one, err := median(lookup(bson.D{{Key: "_id", Value: "none"}}))
		if err != nil {
			return nil, 0, err
		}
		var out []time.Duration
		for _, r := range reads {
			d, err := coldMedian(func(log *adapters.AttemptPages) error { return r.do(log, size) })
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", r.name, err)
			}
			out = append(out, d)
		}
		return out, one, nil
	}
	if err := store(0, logSmall); err != nil {
		return err
	}
	small, _, err := measure(logSmall)
	if err != nil {
		return err
	}
	if err := store(logSmall, logLarge); err != nil {
		return err
	}
	large, one, err := measure(logLarge)
	if err != nil {
		return err
	}
	whole, err := median(lookup(bson.D{{Key: "first_ms", Value: -1}}))
	if err != nil {
		return err
	}
	fmt.Printf("durable log reads, %d webhooks, %d attempts a page; one lookup by id %s; one query on anything else reads the whole index: %s at %d attempts\n",
		logHooks, logPerPage, one.Round(time.Microsecond), whole.Round(time.Millisecond), logLarge)
	slowest := time.Duration(0)
	for i, r := range reads {
		slowest = max(slowest, large[i])
		fmt.Printf("  %-36s %7.1f ms at %d attempts, %7.1f ms at %d = %.2fx (%.0f lookups' time, %.3f of a whole read)\n", r.name,
			float64(small[i].Microseconds())/1000, logSmall, float64(large[i].Microseconds())/1000, logLarge,
			large[i].Seconds()/small[i].Seconds(), large[i].Seconds()/one.Seconds(), large[i].Seconds()/whole.Seconds())
	}
	ratio := slowest.Seconds() / whole.Seconds()
	fmt.Printf("  at %d attempts the slowest read takes %.3f of a whole read (goal <= 0.1: reads cost the page, not the log): %s\n",
		logLarge, ratio, map[bool]string{true: "MET", false: "NOT MET"}[ratio <= 0.1])
	return paging(ctx, db)
}

// paging reads one webhook's whole log back, 50 attempts a read, as a
// reader paging through the console does, on a log opened afresh: each
// read after the first finds the newest slots and nodes it walks past,
// and the page it reads on from, kept by the reads before it.
func paging(ctx context.Context, db *mongo.Database) error {
	log, err := adapters.OpenAttemptPages(ctx, db)
	if err != nil {
		return err
	}
	var position *app.LogPosition
	reads, listed := 0, 0
	start := time.Now()
	for {
		got, err := log.Older(ctx, "whk_00", domain.LogFilter{}, position, 50)
		if err != nil {
			return err
		}
		reads++
		if len(got) == 0 {
			break
		}
		listed += len(got)
		position = &app.LogPosition{AtMs: got[len(got)-1].GetAtUnixMs(), AttemptID: got[len(got)-1].GetAttemptId()}
	}
	if want := logLarge / logHooks; listed != want {
		return fmt.Errorf("paging: %d attempts listed; want %d", listed, want)
	}
	took := time.Since(start)
	fmt.Printf("  paging back through one webhook's %d attempts, 50 a read: %d reads in %s, %.1f ms a read\n",
		listed, reads, took.Round(time.Millisecond), took.Seconds()*1000/float64(reads))
	return nil
}
