// Package tickets wires the tickets service: its stream and read model,
// the directory it learns from the agents, identity and platform streams,
// and its HTTP-over-NATS endpoint.
package tickets

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/ports"
	"github.com/voiceai-platform/voiceai/services/tickets/qaworker"
)

// Name of the service on the bus.
const Name = "tickets"

// Service is a running tickets service.
type Service = runtime.Service[*app.App]

// Config is the service's own configuration.
type Config struct {
	// Secret is the deployment secret (config.Service.SecretKey).
	Secret    string
	Snapshots SnapshotConfig
}

// SnapshotConfig tunes the conversation index's snapshots, what a restart
// reads instead of replaying the platform stream whole.
type SnapshotConfig struct {
	// Every is how many platform records call for a new snapshot; 0
	// writes none (a restart replays the stream whole).
	Every uint64 `env:"VOICEAI_TICKETS_SNAPSHOT_EVERY" envDefault:"20000"`
}

// Start runs the service until ctx ends. It serves once the directory has
// caught up with the agents, identity and platform streams.
func Start(ctx context.Context, d runtime.Deps, c Config) (*Service, error) {
	secret := c.Secret
	// PLATFORM is published on by producers outside the suite: whoever
	// starts first creates it.
	if err := eventstore.EnsureEventStreams(ctx, d.JS, d.StreamReplicas, events.TicketsStream, events.PlatformStream); err != nil {
		return nil, err
	}
	// Transcripts are sealed under a key per conversation: the directory
	// opens them to index their words and tools, and a deletion destroys
	// the key.
	keys, err := kvkeys.Open(ctx, d.JS, d.StreamReplicas, secret)
	if err != nil {
		return nil, err
	}
	dir := adapters.NewDirectory(d.Logger)
	dir.Keys = keys
	snapshots, err := startConversationIndex(ctx, d, c.Snapshots, dir, keys)
	if err != nil {
		return nil, err
	}
	// Listings read the store, written off the request path by its
	// projector, or an index in memory. Behind the index the store keeps
	// no copy of the tickets: TICKETS, kept forever, is their durable
	// record, the index is built from it at start, and a copy nothing
	// read cost each create about 15% of its CPU (README: tickets_state).
	var rm app.ReadModel
	var idx *memory.Index
	if d.ReadIndex == config.ReadIndexMemory {
		idx = memory.NewLoadingIndex(memory.WithLogger(d.Logger))
		rm = idx
	} else {
		store, err := adapters.NewReadModel(ctx, d.Database(Name))
		if err != nil {
			return nil, err
		}
		rm = store
		d.StartProjection(ctx, store.Tickets, projection.Config{
			Stream: events.TicketsStream, Durable: adapters.ProjectorDurable, FilterSubjects: []string{events.TicketsAll},
		}, adapters.Handler)
	}
	// The tags and the conversations' feedback and tags live on TICKETS
	// beside the tickets: one replay feeds them all.
	tags := memory.NewTagIndex()
	if err := followTickets(ctx, d, idx, tags, dir.Conversations); err != nil {
		return nil, err
	}
	a := newApp(d, rm, dir)
	transcripts, reported := startTranscripts(ctx, d, keys, dir.Conversations.ConversationDeleted)
	verdicts := startVerdicts(ctx, d, keys, dir.Conversations.ConversationDeleted)
	a.Conversations, a.Transcripts, a.Reported, a.Verdicts = dir.Conversations, transcripts, reported, verdicts
	a.ConvWriter, a.Tags = dir.Conversations, tags
	forgetters := []app.ConversationForgetter{dir.Conversations, snapshots, transcripts, reported, verdicts}
	if d.ReadIndex != config.ReadIndexMemory {
		convs, err := startConversationStore(ctx, d, keys)
		if err != nil {
			return nil, err
		}
		a.Conversations, a.ConvWriter = convs, convs
		forgetters = append(forgetters, convs)
	}
	a.Deletion = app.ConversationDeletion{
		Removal:    adapters.StreamRemoval{JS: d.JS, Keys: keys},
		ReadModels: forgetters,
		Deleted:    dir.Conversations.ConversationDeleted,
		Marks:      dir.Conversations,
	}
	a.Cursors = cursor.NewCodec(runtime.SubKey(secret, "tickets/cursor"))
	return runtime.Serve(d, Name, a, &ports.Handlers{App: a})
}

// startConversationIndex fills the directory's conversation index from
// its stored snapshot and the platform records after it (or from the
// whole stream when there is none to read), and keeps snapshots stored
// from then on.
func startConversationIndex(ctx context.Context, d runtime.Deps, c SnapshotConfig, dir *adapters.Directory, keys *kvkeys.Keys) (*adapters.IndexSnapshotter, error) {
	store, err := adapters.OpenIndexSnapshots(ctx, d.JS, d.StreamReplicas, keys)
	if err != nil {
		return nil, err
	}
	store.Log = d.Logger
	snapshotter := &adapters.IndexSnapshotter{Index: dir.Conversations, Store: store, Every: c.Every,
		Deletions: adapters.PlatformDeletions(d.JS), Hold: d.WritesHeld, Log: d.Logger}
	start := time.Now()
	st, loaded, err := store.Load(ctx, dir.Conversations)
	if err != nil {
		return nil, err
	}
	if loaded {
		snapshotter.Loaded(st)
		d.Logger.Info("conversation index read from its snapshot", "platform_seq", st.PlatformSeq, "conversations", st.Conversations, "took", time.Since(start))
	}
	// A replay from the first record opens every sealed transcript: their
	// keys are read in one pass of the bucket, not asked for one by one.
	release := func() {}
	if !loaded {
		if release, err = keys.Warm(ctx); err != nil {
			return nil, err
		}
	}
	err = dir.Follow(ctx, d.JS)
	release()
	if err != nil {
		return nil, err
	}
	d.Logger.Info("conversation index caught up", "records_replayed", dir.Conversations.State().PlatformSeq-st.PlatformSeq, "took", time.Since(start))
	go snapshotter.Run(ctx)
	return snapshotter, nil
}

// startTranscripts projects the transcripts and analyses call stacks
// hand over on conversation_ended into the service's store, and returns
// their readers.
func startTranscripts(ctx context.Context, d runtime.Deps, keys convseal.Keys, deleted func(workspaceID, conversationID string) bool) (adapters.Transcripts, adapters.Reported) {
	t, r := adapters.OpenTranscripts(d.Database(Name)), adapters.OpenReported(d.Database(Name))
	d.StartProjection(ctx, t.Coll, projection.Config{
		Stream: events.PlatformStream, Durable: adapters.TranscriptsDurable, FilterSubjects: adapters.TranscriptsFilter,
	}, adapters.TranscriptProjection(keys))
	d.StartProjection(ctx, r.Coll, projection.Config{
		Stream: events.PlatformStream, Durable: adapters.ReportedDurable, FilterSubjects: adapters.TranscriptsFilter,
	}, adapters.ReportedProjection(keys, deleted))
	return t, r
}

// startVerdicts projects the testing service's analyses of conversations
// and reviewers' labels of runs and conversations (stream TESTRUNS, once
// the testing service has made it) into the service's store, and returns
// their reader.
func startVerdicts(ctx context.Context, d runtime.Deps, keys convseal.Keys, deleted func(workspaceID, conversationID string) bool) adapters.Verdicts {
	v := adapters.OpenVerdicts(d.Database(Name))
	if d.ReadIndex == config.ReadIndexMemory { // the embedded store
		v.LabelsLookup = mongox.EachByID
	}
	for _, p := range []struct {
		coll    *mongo.Collection
		durable string
		filter  []string
		handler projection.Handler
	}{
		{v.AnalysesColl, adapters.AnalysesDurable, adapters.AnalysesFilter, adapters.AnalysisHandler(keys)},
		{v.LabelsColl, adapters.LabelsDurable, adapters.LabelsFilter, adapters.LabelHandler(keys)},
	} {
		// TESTRUNS is the testing service's, which may start later.
		d.StartProjection(ctx, p.coll, projection.Config{Stream: events.TestRunsStream, Durable: p.durable, FilterSubjects: p.filter},
			adapters.SkippingDeleted(p.handler, deleted))
	}
	return v
}

// startConversationStore opens the store read model of conversations and
// runs its two projectors: the platform's conversation events and the
// annotations on TICKETS.
func startConversationStore(ctx context.Context, d runtime.Deps, keys convseal.Keys) (*adapters.ConversationStore, error) {
	convs, err := adapters.NewConversationStore(ctx, d.Database(Name))
	if err != nil {
		return nil, err
	}
	// Each writes its own fields, guarded by its own sequence, so both are
	// guarded projections of one collection: dropped, or restored from an
	// older backup, it is replayed from both streams.
	d.StartApplying(ctx, convs.Coll, projection.Config{
		Stream: events.PlatformStream, Durable: adapters.ConversationsDurable, FilterSubjects: adapters.ConversationFeed, Shared: true,
	}, projection.EachRecord(func(ctx context.Context, rec eventstore.Record) error {
		return adapters.RecordConversation(ctx, convs, keys, rec)
	}))
	d.StartApplying(ctx, convs.Coll, projection.Config{
		Stream: events.TicketsStream, Durable: adapters.AnnotationsDurable, FilterSubjects: []string{events.TicketsAll}, Shared: true,
	}, projection.EachRecord(func(ctx context.Context, rec eventstore.Record) error {
		return adapters.AnnotateConversation(ctx, convs, rec)
	}))
	return convs, nil
}

// followTickets builds, from each TICKETS subject's last event, the
// in-memory ticket index (when idx is set: a loading one, listed once the
// replay is applied), the tags and the conversations' annotations (when
// set), and keeps them current; it returns once the replay is applied.
func followTickets(ctx context.Context, d runtime.Deps, idx *memory.Index, tags app.Tags, conv app.ConversationWriter) error {
	// A ticket's subject ends in its id; the stream's copy of a ticket
	// this replica wrote is already in its index.
	known := func(subject string, seq uint64) bool {
		return idx != nil && idx.Holds(subject[strings.LastIndexByte(subject, '.')+1:], seq)
	}
	err := eventstore.FollowRecordsExcept(ctx, d.JS, events.TicketsStream, []string{events.TicketsAll}, d.Logger, known, func(rec eventstore.Record) {
		// A ticket's event carries the ticket alone: its encoding goes to
		// the index as the record has it, the event around it not decoded
		// (at a million tickets, a restart's replay decoded each event and
		// encoded its ticket again).
		if ticket, ok, err := events.StateBytes[*ticketsv1.Ticket](rec.Type, rec.Data); ok && err == nil {
			if idx != nil {
				if err := idx.PutEncoded(ctx, rec.Seq, ticket); err != nil {
					eventstore.WarnNotDecoded(d.Logger, events.TicketsStream, rec, err)
				}
			}
			return
		}
		msg, ok := eventstore.DecodeOrWarn(d.Logger, events.TicketsStream, rec)
		if !ok {
			return
		}
		if t, ok := events.StateOf[*ticketsv1.Ticket](msg); ok && idx != nil {
			_ = idx.Put(ctx, rec.Seq, t)
		}
		if t, ok := events.StateOf[*ticketsv1.ConversationTag](msg); ok && tags != nil {
			_ = tags.Put(ctx, rec.Seq, t)
		}
		if an, ok := events.StateOf[*ticketsv1.ConversationAnnotations](msg); ok && conv != nil {
			_ = conv.Annotate(ctx, rec.Seq, an)
		}
	}, func() {
		if idx != nil {
			idx.Reset()
		}
	})
	if err == nil && idx != nil {
		start := time.Now()
		idx.Loaded()
		d.Logger.Info("ticket index listed", "took", time.Since(start))
	}
	return err
}

// QAWorkerConfig tunes a QA worker.
type QAWorkerConfig struct {
	// AckWait is how long a batch a worker took may go unacknowledged
	// before another replica gets it: a killed worker's batches wait this
	// long (a live worker says of what it holds that it is in hand, so
	// a slow batch is not handed out twice).
	AckWait time.Duration `env:"VOICEAI_QA_ACK_WAIT" envDefault:"10s"`
	// Batch bounds the messages a worker handles at once: large enough
	// that a batch of failed runs names many tests, whose tickets are
	// written at once.
	Batch int `env:"VOICEAI_QA_BATCH" envDefault:"1024"`
	// Clustering is what groups tickets and sets their issue type:
	// "rules" (offline, deterministic) or "model" (the OpenAI-compatible
	// model the VOICEAI_LLM_* variables name, one request per new ticket;
	// exact duplicates are still merged by the rules).
	Clustering string        `env:"VOICEAI_QA_CLUSTERING" envDefault:"rules"`
	BaseURL    string        `env:"VOICEAI_LLM_BASE_URL"`
	APIKey     string        `env:"VOICEAI_LLM_API_KEY"`
	LLMModel   string        `env:"VOICEAI_LLM_MODEL"`
	LLMTimeout time.Duration `env:"VOICEAI_LLM_TIMEOUT" envDefault:"60s"`
}

// Validate checks the configuration.
func (c QAWorkerConfig) Validate() error {
	if c.AckWait < time.Second {
		return fmt.Errorf("VOICEAI_QA_ACK_WAIT %s: want at least 1s", c.AckWait)
	}
	if c.Batch < 1 || c.Batch > 4096 {
		return fmt.Errorf("VOICEAI_QA_BATCH %d: want 1..4096", c.Batch)
	}
	switch c.Clustering {
	case "rules":
	case "model":
		if c.BaseURL == "" || c.LLMModel == "" {
			return fmt.Errorf("VOICEAI_QA_CLUSTERING=model needs VOICEAI_LLM_BASE_URL and VOICEAI_LLM_MODEL")
		}
	default:
		return fmt.Errorf("VOICEAI_QA_CLUSTERING %q: want rules or model", c.Clustering)
	}
	return nil
}

// advisor is the model that clusters, or nil for the offline rules.
func (c QAWorkerConfig) advisor() (app.ClusterAdvisor, error) {
	if c.Clustering != "model" {
		return nil, nil
	}
	client, err := llm.New(llm.Config{BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.LLMModel, Timeout: c.LLMTimeout})
	if err != nil {
		return nil, err
	}
	return adapters.ModelAdvisor{Client: client}, nil
}

// StartQAWorker runs one QA worker replica (package qaworker) until ctx
// ends, over a: the service's own application when they share a process,
// or NewWorkerApp's.
//
// With model clustering the worker's application is a copy of a with the
// model as its advisor, so a service sharing a stays on the rules path.
func StartQAWorker(ctx context.Context, d runtime.Deps, a *app.App, c QAWorkerConfig) (<-chan struct{}, error) {
	advisor, err := c.advisor()
	if err != nil {
		return nil, err
	}
	if advisor != nil {
		own := *a
		own.Advisor = advisor
		a = &own
	}
	w := &qaworker.Worker{
		App: a, Feed: adapters.QAFeed{JS: d.JS, AckWait: c.AckWait, Batch: c.Batch, Hold: d.WritesHeld},
		Testing: eventstore.New(d.JS, events.TestingStream), Log: d.Logger, Metrics: d.Metrics,
	}
	streams, durables := adapters.QAConsumers()
	for i := range streams {
		d.WatchConsumer(streams[i], durables[i])
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			d.Logger.Error("qa worker stopped", "err", err)
		}
	}()
	return done, nil
}

// NewWorkerApp is the tickets application of a QA worker in its own
// process. Its read model is an in-memory index it builds from the
// TICKETS stream and keeps current, like the service's memory index: the
// worker's reads (an agent's active tickets, a conversation's active
// ticket) cost the page, and its own writes are in the index at once, so
// it needs no store and never waits on one.
func NewWorkerApp(ctx context.Context, d runtime.Deps) (*app.App, error) {
	if err := eventstore.EnsureEventStreams(ctx, d.JS, d.StreamReplicas, events.TicketsStream); err != nil {
		return nil, err
	}
	dir := adapters.NewDirectory(d.Logger)
	if err := dir.Follow(ctx, d.JS); err != nil {
		return nil, err
	}
	idx := memory.NewLoadingIndex(memory.WithoutSearch(), memory.WithLogger(d.Logger))
	if err := followTickets(ctx, d, idx, nil, nil); err != nil {
		return nil, err
	}
	return newApp(d, idx, dir), nil
}

// newApp is the application over the TICKETS stream, asking AGENTS and
// IDENTITY for what the directory has not seen yet.
func newApp(d runtime.Deps, rm app.ReadModel, dir *adapters.Directory) *app.App {
	a := app.New(eventstore.New(d.JS, events.TicketsStream), rm, dir, d.Logger, d.Clock())
	a.Agents, a.Identity = eventstore.New(d.JS, events.AgentsStream), eventstore.New(d.JS, events.IdentityStream)
	return a
}
