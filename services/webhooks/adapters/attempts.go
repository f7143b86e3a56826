package adapters

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/fifo"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
)

// StreamAttemptLog is app.AttemptLog on the attempt streams: Record adds
// the attempt to the in-memory log and publishes it (AttemptPublisher),
// and the log follows WEBHOOK_ATTEMPTS for the attempts other processes
// record.
type StreamAttemptLog struct {
	*memory.AttemptLog
	Publisher *AttemptPublisher
}

// FollowAttemptLog replays the attempts stream into l and follows it; it
// returns once the replay is complete.
func FollowAttemptLog(ctx context.Context, js jetstream.JetStream, l *memory.AttemptLog, log *slog.Logger) error {
	return FollowAttempts(ctx, js, log, l.Add)
}

// Record adds a to the log and publishes it, without waiting for the
// streams' answers.
func (l StreamAttemptLog) Record(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return l.Publisher.Record(ctx, a)
}

// RecordDurable adds a to the log and publishes it, waiting for the
// streams' answers.
func (l StreamAttemptLog) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return l.Publisher.RecordDurable(ctx, a)
}

// How a record a stream did not take is published again: for up to
// attemptRetryFor (well within the streams' 10-minute duplicate window,
// so a record taken after all is kept once), every attemptRetryWait at
// first, then up to attemptRetryMaxWait apart; at most
// attemptRetriesHeld records wait at once.
const (
	attemptRetryFor     = 5 * time.Minute
	attemptRetryWait    = 100 * time.Millisecond
	attemptRetryMaxWait = 5 * time.Second
	attemptRetriesHeld  = 100_000
	// attemptAckTimeout is how long a record's acknowledgement is waited
	// for before it is published again: longer than a stream leader
	// election, which answers no one.
	attemptAckTimeout = 15 * time.Second
	// attemptsInFlight bounds the records published and not yet
	// acknowledged: two for each attempt.
	attemptsInFlight = 16_384
)

// AttemptPublisher is app.AttemptRecorder on the attempt streams: each
// attempt is published to WEBHOOK_ATTEMPTS, which every process follows
// (the API's delivery log, the auto-disable rule), and to
// WEBHOOK_ATTEMPTS_LOG, the queue the durable delivery log is copied
// from; each stream keeps an attempt id once. A dispatcher keeps none
// itself. A record a stream did not take (no leader while one is
// elected, the connection down, no answer) is published again until it
// is, or attemptRetryFor has passed: a stream changing leaders loses no
// line of the log.
type AttemptPublisher struct {
	async   jetstream.JetStream       // what it does not take comes back to failed
	sync    jetstream.JetStream       // the retries
	kept    [2]*eventstore.KeptStream // WEBHOOK_ATTEMPTS, WEBHOOK_ATTEMPTS_LOG: made again when deleted
	retries *fifo.Queue[heldRecord]   // in the order they failed, at most attemptRetriesHeld
	held    atomic.Int64              // records held, from failed until taken or given up
	log     *slog.Logger
	ctx     context.Context
}

// heldRecord is a record waiting to be published again.
type heldRecord struct {
	msg   *nats.Msg
	since time.Time
}

// NewAttemptPublisher publishes on js's connection, retrying until ctx
// ends.
func NewAttemptPublisher(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (*AttemptPublisher, error) {
	p := &AttemptPublisher{sync: js, retries: fifo.New[heldRecord](attemptRetriesHeld), log: log, ctx: ctx}
	for i, cfg := range []jetstream.StreamConfig{attemptsConfig(1), attemptsLogConfig(1)} {
		p.kept[i] = &eventstore.KeptStream{JS: js, Config: cfg, Sibling: events.WebhooksStream, Log: log}
	}
	async, err := jetstream.New(js.Conn(), jetstream.WithPublishAsyncErrHandler(p.failed),
		jetstream.WithPublishAsyncTimeout(attemptAckTimeout), jetstream.WithPublishAsyncMaxPending(attemptsInFlight))
	if err != nil {
		return nil, err
	}
	p.async = async
	go p.retry()
	return p, nil
}

// Record publishes a to both streams without waiting for their answers.
func (p *AttemptPublisher) Record(_ context.Context, a *webhooksv1.DeliveryAttempt) error {
	msgs, err := attemptMsgs(p.fit(a))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if _, err := p.async.PublishMsgAsync(m); err != nil {
			p.failed(p.async, m, err) // too many in flight: held like a refusal
		}
	}
	return nil
}

// RecordDurable publishes a to both streams and waits for them to store
// it.
func (p *AttemptPublisher) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	msgs, err := attemptMsgs(p.fit(a))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if _, err := p.sync.PublishMsg(ctx, m); err != nil {
			p.heal(m.Subject, err)
			return err
		}
	}
	return nil
}

// heal makes the attempt stream of subject again when err came of its
// being deleted: the records held for it are taken again.
func (p *AttemptPublisher) heal(subject string, err error) {
	kept := p.kept[0]
	if strings.HasPrefix(subject, events.WebhookAttemptsLogSubjectPrefix+".") {
		kept = p.kept[1]
	}
	kept.Heal(err)
}

// Flush returns once every record published so far has been taken by its
// stream or given up, or when ctx ends: a dispatcher stopping waits for
// it, so a restart loses no record a stream was slow to take.
func (p *AttemptPublisher) Flush(ctx context.Context) error {
	select {
	case <-p.async.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for p.held.Load() > 0 || p.async.PublishAsyncPending() > 0 {
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// recordHeadroom is what a record's headers may take beside its body.
const recordHeadroom = 1 << 10

// fit is a, or a copy without the bodies it carries (what was posted,
// the first bytes of the answer) when with them it would be larger than
// a message may be: the log keeps the line, and a delivery whose body is
// not kept cannot be resent.
func (p *AttemptPublisher) fit(a *webhooksv1.DeliveryAttempt) *webhooksv1.DeliveryAttempt {
	if int64(proto.Size(a))+recordHeadroom <= p.sync.Conn().MaxPayload() {
		return a
	}
	slim := proto.Clone(a).(*webhooksv1.DeliveryAttempt)
	slim.RequestBody, slim.ResponseBody = nil, ""
	return slim
}

// failed holds a record a stream did not take, to publish it again; one
// no stream could ever take (larger than a message may be) is lost at
// once, rather than hold up the others behind it.
func (p *AttemptPublisher) failed(_ jetstream.JetStream, m *nats.Msg, err error) {
	if errors.Is(err, nats.ErrMaxPayload) {
		p.log.Error("attempt record lost: no stream can take it", "subject", m.Subject, "bytes", len(m.Data), "err", err)
		return
	}
	p.held.Add(1)
	if !p.retries.Push(heldRecord{msg: m, since: time.Now()}) {
		p.held.Add(-1)
		p.log.Error("attempt record lost: too many wait to be published again", "subject", m.Subject, "err", err)
	}
}

// retry publishes the held records again, one at a time and in the order
// they failed, each until a stream takes it or attemptRetryFor has
// passed, waiting longer after each refusal.
func (p *AttemptPublisher) retry() {
	wait := attemptRetryWait
	failing := false // told, until a record is taken again
	for {
		next := p.retries.TakeUpTo(nil, 1)
		if len(next) == 0 {
			select {
			case <-p.retries.Ready():
				continue
			case <-p.ctx.Done():
				return
			}
		}
		r := next[0]
		for {
			ctx, cancel := context.WithTimeout(p.ctx, attemptAckTimeout)
			_, err := p.sync.PublishMsg(ctx, &nats.Msg{Subject: r.msg.Subject, Header: r.msg.Header, Data: r.msg.Data})
			cancel()
			if err == nil {
				if failing {
					p.log.Info("attempt records are taken again", "waiting", p.retries.Len())
				}
				wait, failing = attemptRetryWait, false
				p.held.Add(-1)
				break
			}
			if !failing {
				p.log.Warn("attempt records are not taken; publishing them again", "subject", r.msg.Subject, "waiting", p.retries.Len()+1, "err", err)
				failing = true
			}
			p.heal(r.msg.Subject, err)
			if time.Since(r.since) > attemptRetryFor {
				p.log.Error("attempt record lost: no stream took it", "subject", r.msg.Subject, "for", attemptRetryFor, "err", err)
				p.held.Add(-1)
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
				return
			}
			wait = min(2*wait, attemptRetryMaxWait)
		}
	}
}

// attemptMsgs are a's records: on WEBHOOK_ATTEMPTS, and on
// WEBHOOK_ATTEMPTS_LOG, each deduplicated by the attempt id.
func attemptMsgs(a *webhooksv1.DeliveryAttempt) ([]*nats.Msg, error) {
	data, err := proto.Marshal(a)
	if err != nil {
		return nil, err
	}
	msgs := make([]*nats.Msg, 0, 2)
	for _, subjectOf := range []func(string, string) (string, error){events.WebhookAttemptSubject, events.WebhookAttemptLogSubject} {
		subject, err := subjectOf(a.GetWorkspaceId(), a.GetWebhookId())
		if err != nil {
			return nil, err
		}
		m := streamMsg(subject, data, a.GetWorkspaceId(), a.GetEventId())
		m.Header.Set(jetstream.MsgIDHeader, a.GetAttemptId())
		msgs = append(msgs, m)
	}
	return msgs, nil
}
