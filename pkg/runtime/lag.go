package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// consumerLag exports, at each scrape, how far behind the durable
// consumers a process works through are: messages not yet delivered,
// delivered but not acknowledged, and pull requests waiting (a work queue
// with a backlog and no waiting pull has no worker pulling). A
// projector's pending messages are its read model's lag.
type consumerLag struct {
	js        jetstream.JetStream
	mu        sync.Mutex
	watched   map[[2]string]bool
	streams   map[string]bool
	messages  *prometheus.Desc
	consumers *prometheus.Desc
	pending   *prometheus.Desc
	acking    *prometheus.Desc
	waiting   *prometheus.Desc
	scrapeOK  *prometheus.Desc
}

func newConsumerLag(js jetstream.JetStream) *consumerLag {
	labels := []string{"stream", "consumer"}
	return &consumerLag{
		js: js, watched: map[[2]string]bool{}, streams: map[string]bool{},
		messages: prometheus.NewDesc("voiceai_stream_messages",
			"Messages the stream holds (for a work queue: the jobs queued or in flight).", []string{"stream"}, nil),
		consumers: prometheus.NewDesc("voiceai_stream_consumers",
			"Consumers of the stream (TESTJOBS: one per invocation with jobs, and a minute more).", []string{"stream"}, nil),
		pending: prometheus.NewDesc("voiceai_consumer_pending_messages",
			"Messages of the stream the durable consumer has not delivered yet (its backlog; a projector's lag).", labels, nil),
		acking: prometheus.NewDesc("voiceai_consumer_ack_pending_messages",
			"Messages delivered to the consumer and not acknowledged yet (in flight).", labels, nil),
		waiting: prometheus.NewDesc("voiceai_consumer_waiting_pulls",
			"Pull requests waiting on the consumer: 0 with a backlog means no worker is pulling.", labels, nil),
		scrapeOK: prometheus.NewDesc("voiceai_consumer_info_up",
			"1 when the consumer's state could be read at this scrape, 0 otherwise.", labels, nil),
	}
}

func (c *consumerLag) watch(stream, durable string) {
	c.mu.Lock()
	c.watched[[2]string{stream, durable}] = true
	c.mu.Unlock()
}

func (c *consumerLag) watchStream(stream string) {
	c.mu.Lock()
	c.streams[stream] = true
	c.mu.Unlock()
}

func (c *consumerLag) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.messages
	ch <- c.consumers
	ch <- c.pending
	ch <- c.acking
	ch <- c.waiting
	ch <- c.scrapeOK
}

func (c *consumerLag) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	watched := make([][2]string, 0, len(c.watched))
	for k := range c.watched {
		watched = append(watched, k)
	}
	streams := make([]string, 0, len(c.streams))
	for s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, name := range streams {
		if str, err := c.js.Stream(ctx, name); err == nil {
			if info := str.CachedInfo(); info != nil {
				ch <- prometheus.MustNewConstMetric(c.messages, prometheus.GaugeValue, float64(info.State.Msgs), name)
				ch <- prometheus.MustNewConstMetric(c.consumers, prometheus.GaugeValue, float64(info.State.Consumers), name)
			}
		}
	}
	for _, k := range watched {
		cons, err := c.js.Consumer(ctx, k[0], k[1])
		var info *jetstream.ConsumerInfo
		if err == nil {
			info = cons.CachedInfo() // fresh: Consumer just fetched it
		}
		if info == nil {
			ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 0, k[0], k[1])
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, 1, k[0], k[1])
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(info.NumPending), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(c.acking, prometheus.GaugeValue, float64(info.NumAckPending), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(info.NumWaiting), k[0], k[1])
	}
}

// WatchConsumer exports the lag of a durable consumer this process works
// through (see consumerLag). Deps made without a registry export nothing.
func (d Deps) WatchConsumer(stream, durable string) {
	if d.lag != nil {
		d.lag.watch(stream, durable)
	}
}

// WatchStream exports how many messages a stream holds.
func (d Deps) WatchStream(stream string) {
	if d.lag != nil {
		d.lag.watchStream(stream)
	}
}
