package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The floor is the least that at-least-once delivery of an event does,
// run in the same process as the dispatcher's rounds and interleaved with
// them, so that a slow or noisy machine moves both: a bare pool of as
// many workers as the dispatcher has takes each event from a JetStream
// work queue, signs it as a delivery is signed (delivery.Headers: the
// three signatures), posts it to the same receiver and acknowledges it.
// No fan-out into jobs, no attempt log, no share between workspaces.
type floor struct {
	js   jetstream.JetStream
	stop func()
}

const (
	floorStream  = "BENCH_DELIVERY_FLOOR"
	floorSubject = "benchfloor.events"
)

// startFloor makes the floor's work queue and starts its workers posting
// to url.
func startFloor(ctx context.Context, js jetstream.JetStream, url string, workers int) (*floor, error) {
	str, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: floorStream, Subjects: []string{floorSubject},
		Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		return nil, err
	}
	cons, err := str.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: 100_000, AckWait: time.Minute})
	if err != nil {
		return nil, err
	}
	secret, err := domain.NewSecret()
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	msgs, done := make(chan jetstream.Msg), make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select { // after stop, give up rather than wait on workers that have ended
		case msgs <- m:
		case <-done:
		}
	}, jetstream.PullMaxMessages(workers))
	if err != nil {
		return nil, err
	}
	for range workers {
		go func() {
			for {
				select {
				case m := <-msgs:
					post(ctx, client, url, []byte(secret), m)
				case <-done:
					return
				}
			}
		}()
	}
	return &floor{js: js, stop: func() { cc.Stop(); close(done) }}, nil
}

// post delivers m's event as the dispatcher would, and acknowledges it
// once the receiver answered 2xx.
func post(ctx context.Context, client *http.Client, url string, secret []byte, m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		_ = m.Nak()
		return
	}
	id := "evt_floor_" + strconv.FormatUint(meta.Sequence.Stream, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(m.Data()))
	if err != nil {
		_ = m.Nak()
		return
	}
	req.Header = delivery.Headers(delivery.Request{Secret: secret, Body: m.Data(), Event: "call_started", EventID: id, WebhookID: "whk_floor", Attempt: 1})
	resp, err := client.Do(req)
	if err != nil {
		_ = m.Nak()
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		_ = m.Nak()
		return
	}
	_ = m.Ack()
}

// publish queues one event for the floor.
func (f *floor) publish(body []byte) (jetstream.PubAckFuture, error) {
	msg := nats.NewMsg(floorSubject)
	msg.Data = body
	return f.js.PublishMsgAsync(msg, jetstream.WithStallWait(time.Minute))
}
