package app

import (
	"context"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The ports the use cases run on. adapters implements them over NATS,
// JetStream and Mongo, and in memory for tests.

// Registry is the set of live webhooks as the use cases see them (the
// dispatcher's fan-out also matches events against the adapter's): every
// change the repository makes is put here inline, so a caller reads its
// own writes.
type Registry interface {
	// Put records the state of a webhook at log sequence seq, unless a
	// newer one is known; a deleted webhook leaves Get and List.
	Put(seq uint64, w *webhooksv1.Webhook)
	// Get returns a live webhook of the workspace.
	Get(workspaceID, id string) (*webhooksv1.Webhook, bool)
	// List returns the workspace's live webhooks, oldest first.
	List(workspaceID string) []*webhooksv1.Webhook
}

// Subscriptions is the registry as the dispatcher reads it: which
// webhooks an event reaches, and whether what it knows is current.
type Subscriptions interface {
	// Get returns a live webhook of the workspace.
	Get(workspaceID, id string) (*webhooksv1.Webhook, bool)
	// Known reports whether any change of webhook id was applied, its
	// deletion included: catching up cannot make such a webhook appear.
	Known(id string) bool
	// WaitCurrent returns once every webhook change stored before an
	// event stored at storedAt (the stream's clock) has been applied.
	WaitCurrent(ctx context.Context, storedAt time.Time) error
	// CatchUp returns once every webhook change stored before the call
	// has been applied: for a caller with no event's time to go by.
	CatchUp(ctx context.Context) error
	// Match returns the webhooks of the workspace that, when event was
	// stored (storedAt), existed, were active and subscribed to it: as
	// they were then, not as they are now.
	Match(workspaceID, event string, storedAt time.Time) []*webhooksv1.Webhook
	// MatchMissed returns the webhooks of the workspace subscribed to
	// event that the dispatcher had disabled (failing, gone) when it was
	// stored: the event is logged for them as not sent.
	MatchMissed(workspaceID, event string, storedAt time.Time) []*webhooksv1.Webhook
}

// AttemptRecorder records delivery attempts, as the dispatcher does.
type AttemptRecorder interface {
	// Record adds an attempt (the same attempt id twice is kept once)
	// and makes it durable without waiting for that: it is readable here
	// when Record returns, and a record lost on the way loses a line of
	// the log, never a delivery.
	Record(ctx context.Context, a *webhooksv1.DeliveryAttempt) error
	// RecordDurable is Record returning once the attempt is durable (or
	// with the error that it is not): for a record that is the only trace
	// of work left undone, an event logged as not sent that recover
	// replays.
	RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error
}

// AttemptLog is the delivery log of every webhook: its recent attempts
// and their health. It holds at most MaxLogLimit attempts of a webhook,
// so that one Recent of MaxLogLimit lists every attempt held (what a page
// of the log below a cursor relies on).
type AttemptLog interface {
	AttemptRecorder
	// Recent returns up to limit of the attempts held of a webhook that f
	// selects, the last recorded first; older attempts are in the
	// DeliveryHistory only.
	Recent(webhookID string, f domain.LogFilter, limit int) []*webhooksv1.DeliveryAttempt
	// HeldSince is when the oldest attempt held of a webhook was made (0:
	// none held). Every attempt made later is held; of that millisecond
	// some may have gone.
	HeldSince(webhookID string) int64
	// Find returns the newest attempt held of a webhook that pred
	// selects, or nil.
	Find(webhookID string, pred func(*webhooksv1.DeliveryAttempt) bool) *webhooksv1.DeliveryAttempt
	// Health summarises a webhook's recent non-test attempts.
	Health(webhookID string) domain.Health
	// Run is a webhook's deliveries that failed for good in a row,
	// counted from enabledAt, and its latest failure.
	Run(webhookID string, enabledAt time.Time) domain.Run
}

// FailureRuns keeps each webhook's deliveries that failed for good in a
// row, from the final attempts of every replica (a dispatcher follows
// the attempt records to apply the auto-disable rule).
type FailureRuns interface {
	// Observe takes an attempt (only a final one, not a test delivery,
	// counts).
	Observe(a *webhooksv1.DeliveryAttempt)
	// Run is a webhook's run counted from enabledAt.
	Run(webhookID string, enabledAt time.Time) domain.Run
}

// DeliveryHistory is the durable delivery log: every attempt, beyond what
// the AttemptLog holds.
type DeliveryHistory interface {
	// Older returns up to limit attempts of a webhook that f selects,
	// below position before (nil: from the newest), newest first.
	Older(ctx context.Context, webhookID string, f domain.LogFilter, before *LogPosition, limit int) ([]*webhooksv1.DeliveryAttempt, error)
	// FirstAttempt returns the first attempt of a delivery, else its
	// earliest recorded with the body (FirstOf), or nil.
	FirstAttempt(ctx context.Context, webhookID, deliveryID string) (*webhooksv1.DeliveryAttempt, error)
}

// Backlog counts the deliveries waiting (scheduled retries, and jobs
// waiting for their workspace's turn, included).
type Backlog interface {
	// Waiting is, per webhook id of the workspace, its deliveries waiting.
	Waiting(ctx context.Context, workspaceID string) (map[string]uint64, error)
	// Queued is every delivery waiting, of every workspace.
	Queued(ctx context.Context) (uint64, error)
}

// PlatformEvent is an ingested event, stored once per ID.
type PlatformEvent struct {
	ID          string
	WorkspaceID string
	Event       string // its name, a valid subject token
	Body        []byte // the JSON envelope
	// Digest is the request's (esproto.RequestDigest) when its id comes
	// from an Idempotency-Key: the id stored again with another digest is
	// the key sent with another event.
	Digest string
}

// Queue is where ingested events and delivery jobs go. Both are
// idempotent by id: publishing the same id again (within the
// deduplication window) stores nothing new and is not an error.
type Queue interface {
	// PublishEvent stores a platform event for the fan-out, once per
	// e.ID; an id stored before with another Digest (within the
	// deduplication window) is refused with apperr.IdempotencyKeyReused.
	PublishEvent(ctx context.Context, e PlatformEvent) error
	// QueueDelivery queues delivery jobs, each once per job id (event,
	// webhook and resend ids), in the order given, and returns once every
	// one is stored (an error: some may be, and queueing them again
	// stores them once).
	QueueDelivery(ctx context.Context, jobs ...Queued) error
	// Defer puts a job taken from the queue back in it, behind what is
	// queued by then, once d.At has come; stored once per d.Key. The
	// copy taken is settled by the caller once Defer returns.
	Defer(ctx context.Context, d Deferral) error
}

// Queued is a delivery job to queue and the trace its delivery continues
// (a W3C traceparent; "": none).
type Queued struct {
	Job         *webhooksv1.DeliveryJob
	Traceparent string
	// AttemptsMade and Deferrals are what became of a job before Defer
	// put it back: the attempts made of it, and the times it waited for
	// its workspace's turn (0 for a job fanned out).
	AttemptsMade, Deferrals int
}

// Deferral is a job put back in the queue to wait for its workspace's
// turn (Turns) until At.
type Deferral struct {
	Queued
	At time.Time
	// Key names the copy of the job that was taken: a replica that
	// deferred it and died before settling it defers it again under the
	// same key, and one copy comes back.
	Key string
}

// Sender makes one attempt of a delivery to a webhook: an HTTP POST, or
// for a relay webhook a hand-over to the client polling for it.
type Sender interface {
	Send(ctx context.Context, w *webhooksv1.Webhook, r delivery.Request) delivery.Result
	// HostAllowed reports whether the operator allowed host: a webhook
	// may point at it though it is private, over plain http.
	HostAllowed(host string) bool
}

// Sealer seals signing secrets at rest, bound to their webhook id.
type Sealer interface {
	Seal(id, secret string) ([]byte, error)
	Open(id string, sealed []byte) ([]byte, error)
}

// RelayRequest is a delivery waiting for a relay client: what to POST,
// and where to send the outcome.
type RelayRequest struct {
	Reply   string
	Headers map[string]string
	Body    []byte
}

// Relay carries relay deliveries between the dispatcher's attempts and
// the clients polling for them.
type Relay interface {
	// Take waits until ctx ends for the next delivery of the webhook
	// (nil, nil when none came); clients polling one webhook share its
	// deliveries, each goes to one of them.
	Take(ctx context.Context, workspaceID, webhookID string) (*RelayRequest, error)
	// Answer sends a client's outcome to reply: the status its local
	// receiver answered (0: unreachable, errText says why) and its body.
	Answer(ctx context.Context, reply string, status int, body []byte, errText string) error
}
