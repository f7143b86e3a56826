package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
	ticketsadapters "github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// The goals of (m), issue 46.
const (
	millionListingGoal = 5 * time.Millisecond
	millionOneGoal     = 20 * time.Millisecond
	millionRestartGoal = 30 * time.Second
	millionMemoryGoal  = 2 << 20 // KiB: 2 GiB
	millionGoMemLimit  = "1536MiB"
)

// profileStart writes a CPU profile of a starting platform's first 30 s
// (its replay) to file, once its profiler answers.
func profileStart(metrics, file string) {
	if err := (&benchproc.Proc{Metrics: metrics}).ProfileWhenUp(20*time.Second, file); err != nil {
		fmt.Fprintln(os.Stderr, "restart profile:", err)
	}
}

// (m) n conversations with realistic transcripts (10 to 40 turns, tool
// calls in some, an analysis), ingested as a call stack sends them: a
// conversation_started then a conversation_ended through POST
// /v1/convai/events, by 16 clients as fast as the platform answers;
// against raw JetStream appends of the same bodies in the same run. Then
// the disk used, the platform's peak memory, the listing and one
// conversation's p50, and a restart after a crash on the same data. Alone:
// `go run ./services/allinone/ticketsbench -section million
// -conversations N [-read-index memory|store]`.
//
// With a data directory (keep), as in (t): the data stays there, and a
// run on it measures the restart alone.
//
// With tail, on a kept run's data, the restart is measured after tail more
// conversations ingested with no snapshot written: a crash at the worst
// moment, long after the last snapshot.
func runMillion(n, requests int, readIndex, keep string, tail int) error {
	run, cleanup, err := newLargeRun("voiceai-ticketsbench-million-", readIndex, keep)
	if err != nil {
		return err
	}
	defer cleanup()
	if run.kept != "" {
		newest := run.kept
		if tail > 0 {
			if newest, err = ingestTail(run, tail); err != nil {
				return err
			}
		}
		return restartConversations(run.start, run.restartProfile, newest, 0)
	}
	p, err := run.start("")
	if err != nil {
		return err
	}
	defer p.Stop()
	agents, err := p.agents(5)
	if err != nil {
		return err
	}
	fmt.Printf("(m) %d conversations, realistic transcripts (10-40 turns), read index %q, GOMEMLIMIT=%s (platform as its own process, 2 cores shared with this client)\n", n, readIndex, millionGoMemLimit)

	base := time.Now().Add(-time.Duration(n) * 5 * time.Millisecond).Add(-time.Hour)
	bodies := func(i int) (started, ended string) {
		return millionEvents(i, agents, base)
	}
	raw, err := rawEventAppends(p.NATSURL, min(n, 20_000), bodies)
	if err != nil {
		return err
	}
	if profileFile != "" {
		go func() {
			if err := p.Profile(30*time.Second, profileFile); err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
		}()
	}
	began := time.Now()
	took, err := inParallelShowingProgress(n, "conversations sent", func(i int64) error {
		return p.sendConversation(bodies(int(i)))
	})
	if err != nil {
		return err
	}
	accepted := float64(2*n) / took.Seconds()
	newest := millionID(n)
	if err := p.waitListed(newest, time.Hour); err != nil {
		return err
	}
	durables := []string{"tickets-transcripts", "tickets-reported-analyses"}
	if readIndex == "store" {
		durables = append(durables, "tickets-conversations")
	}
	if err := p.waitProjected(time.Hour, events.PlatformStream, durables...); err != nil {
		return err
	}
	caughtUp := time.Since(began)
	fmt.Printf("    ingest: %d events accepted in %s = %.0f events/s (%.0f conversations/s) vs raw JetStream appends of the same bodies %.0f/s = %.3f (goal >= 0.333: %s)\n",
		2*n, took.Round(time.Second), accepted, accepted/2, raw, accepted/raw, benchkit.Verdict(accepted/raw >= 1.0/3))
	fmt.Printf("    listed and every transcript projected %s after the first event: %.0f conversations/s end to end\n",
		caughtUp.Round(time.Second), float64(n)/caughtUp.Seconds())
	if profileFile != "" {
		if err := p.HeapProfile(profileFile + ".heap"); err != nil {
			fmt.Fprintln(os.Stderr, "heap profile:", err)
		}
	}
	if err := printDisk(run.data, n, "conversation"); err != nil {
		return err
	}
	peak := p.PeakRSSKiB()

	filters := []struct{ name, query string }{
		{"none", ""},
		{"agent", "agent_id=" + agents[2]},
		{"call_successful", "call_successful=failure"},
		{"tool_names", "tool_names=issue_refund"},
		{"evaluation", "evaluation_params=resolved:failure"},
		{"search (common)", "search=refund"},
		{"search (rare)", "search=chargeback+fraud"},
		{"several at once", "agent_id=" + agents[1] + "&call_successful=failure&tool_names=lookup_order&search=order"},
	}
	if err := p.listingsUnder(requests, "/v1/convai/conversations?page_size=100&", filters, 200); err != nil {
		return err
	}
	one, err := p.oneConversations(n, requests)
	if err != nil {
		return err
	}
	fmt.Printf("    one conversation with its transcript (random ones), p50 %s (goal < %s: %s)\n",
		one.Round(10*time.Microsecond), millionOneGoal, benchkit.Verdict(one < millionOneGoal))

	// A crash, then a start on the same data: ready once the first listing
	// answers with the newest conversation.
	fmt.Printf("    at the crash: %s\n", snapshotAge(p.NATSURL))
	p.Kill()
	if err := run.crashed(newest); err != nil {
		return err
	}
	return restartConversations(run.start, run.restartProfile, newest, peak)
}

// ingestTail starts the platform on a kept run's data with snapshots off,
// ingests tail conversations after the run's newest, and kills it; it
// returns the newest conversation now.
func ingestTail(run largeRun, tail int) (string, error) {
	var from int
	if _, err := fmt.Sscanf(run.kept, "conv_m%d", &from); err != nil {
		return "", fmt.Errorf("the kept run's newest record %q is no conversation of (m): %w", run.kept, err)
	}
	p, err := run.start("", "VOICEAI_TICKETS_SNAPSHOT_EVERY=0")
	if err != nil {
		return "", err
	}
	defer p.Stop()
	agents, err := p.agents(5)
	if err != nil {
		return "", err
	}
	base := time.Now().Add(-time.Duration(tail) * 5 * time.Millisecond).Add(-time.Hour)
	took, err := inParallel(tail, func(i int64) error {
		return p.sendConversation(millionEvents(from+int(i), agents, base))
	})
	if err != nil {
		return "", err
	}
	newest := millionID(from + tail)
	if err := p.waitListed(newest, time.Hour); err != nil {
		return "", err
	}
	fmt.Printf("(m) a tail of %d conversations after the kept run's, snapshots off: ingested in %s\n", tail, took.Round(time.Second))
	fmt.Printf("    at the crash: %s\n", snapshotAge(p.NATSURL))
	p.Kill()
	return newest, run.crashed(newest)
}

// sendConversation ingests one conversation as a call stack sends it: its
// start, then its end.
func (p *platform) sendConversation(started, ended string) error {
	for _, body := range []string{started, ended} {
		if b, code, err := p.api.Do("POST", "/v1/convai/events", body, ""); err != nil || code != http.StatusAccepted {
			return fmt.Errorf("POST /v1/convai/events: %d %.300s %v", code, b, err)
		}
	}
	return nil
}

// restartConversations starts the platform on the data of a run stopped
// by a crash, and measures how long until the first listing answers with
// the newest conversation.
func restartConversations(start func(profile string, env ...string) (*platform, error), profile, newest string, peak int64) error {
	restarted := time.Now()
	p, err := start(profile, "VOICEAI_LOG_LEVEL=info") // for the index's own account of its start
	if err != nil {
		return err
	}
	defer p.Stop()
	up := time.Since(restarted) // ready, and the bench's agent found again
	if err := p.waitListed(newest, 10*time.Minute); err != nil {
		return err
	}
	ready := time.Since(restarted)
	fmt.Printf("    the restart's steps, as the platform logs them: %s; the bench's agent found at %s\n",
		indexStart(p.Logs(), restarted), up.Round(100*time.Millisecond))
	printRestart("first listing answered", ready, peak, p.PeakRSSKiB())
	return nil
}

// indexStart reads, from the platform's log, how its start went, each
// step at its time since restarted: its conversation index's snapshot
// read, the records replayed after it, the platform ready to serve.
func indexStart(logs string, restarted time.Time) string {
	var parts []string
	for line := range strings.Lines(logs) {
		var l struct {
			Time            time.Time
			Msg             string
			Took            time.Duration
			Conversations   int
			RecordsReplayed uint64 `json:"records_replayed"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		at := l.Time.Sub(restarted).Round(100 * time.Millisecond)
		switch l.Msg {
		case "conversation index read from its snapshot":
			parts = append(parts, fmt.Sprintf("a snapshot of %d conversations read in %s (at %s)", l.Conversations, l.Took.Round(100*time.Millisecond), at))
		case "conversation index caught up":
			parts = append(parts, fmt.Sprintf("%d records replayed after it (at %s)", l.RecordsReplayed, at))
		case "ready":
			parts = append(parts, fmt.Sprintf("ready to serve at %s", at))
		}
	}
	if len(parts) == 0 {
		return "none logged"
	}
	return strings.Join(parts, "; ")
}

// printRestart says how long a restart took to what, and the platform's
// peak memory before and after it.
func printRestart(what string, ready time.Duration, peak, after int64) {
	fmt.Printf("    restart after a crash: %s in %s (goal < %s: %s)\n",
		what, ready.Round(time.Millisecond), millionRestartGoal, benchkit.Verdict(ready < millionRestartGoal))
	if peak == 0 { // a restart measured alone
		fmt.Printf("    platform peak memory (RSS) after the restart: %d MiB (goal < 2 GiB: %s)\n", after/1024, benchkit.Verdict(after < millionMemoryGoal))
		return
	}
	fmt.Printf("    platform peak memory (RSS): %d MiB through the ingest and reads, %d MiB after the restart (goal < 2 GiB: %s)\n",
		peak/1024, after/1024, benchkit.Verdict(max(peak, after) < millionMemoryGoal))
}

// waitProjected waits, for within at the most, until each of stream's
// durable projectors has caught up with it: how the benches know that all
// they seeded or ingested has reached the stores they read, and measure
// on a quiet platform.
func (p *platform) waitProjected(within time.Duration, stream string, durables ...string) error {
	return p.waitCaughtUp(within, stream, func(context.Context, jetstream.JetStream) ([]string, error) { return durables, nil })
}

// waitTicketsConsumers waits until every durable consumer of TICKETS
// (the QA worker's, the webhook fan-out's) has handled what it holds.
func (p *platform) waitTicketsConsumers(within time.Duration) error {
	return p.waitCaughtUp(within, events.TicketsStream, func(ctx context.Context, js jetstream.JetStream) ([]string, error) {
		return durablesOf(ctx, js, events.TicketsStream)
	})
}

// waitCaughtUp waits, for within at the most, until each of the durable
// consumers of stream that durables names has caught up with it.
func (p *platform) waitCaughtUp(within time.Duration, stream string, durables func(context.Context, jetstream.JetStream) ([]string, error)) error {
	return p.WithJetStream(func(js jetstream.JetStream) error {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		names, err := durables(ctx, js)
		if err != nil {
			return err
		}
		for _, d := range names {
			if err := projection.WaitCaughtUp(ctx, js, stream, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// listingsUnder measures the p50 of a listing (prefix, ending in ? or &)
// under each filter, and says it against the goal; an answer shorter than
// minBytes is an error.
func (p *platform) listingsUnder(requests int, prefix string, filters []struct{ name, query string }, minBytes int) error {
	kinds := make([]struct{ name, path string }, 0, len(filters))
	for _, f := range filters {
		kinds = append(kinds, struct{ name, path string }{f.name, prefix + f.query})
	}
	lat, err := p.measureAtLeast(requests, kinds, minBytes)
	if err != nil {
		return err
	}
	fmt.Printf("    listing p50 (page of 100), goal < %s:\n", millionListingGoal)
	for _, f := range filters {
		d := lat[f.name]
		fmt.Printf("      %-17s %9s  %s\n", f.name, d.Round(10*time.Microsecond), benchkit.Verdict(d < millionListingGoal))
	}
	return nil
}

func millionID(i int) string { return fmt.Sprintf("conv_m%07d", i) }

// millionEvents are conversation i's two ingest bodies: its start, and
// its end with the transcript, the outcome, the duration and an analysis
// (an evaluation, two collected values).
func millionEvents(i int, agents []string, base time.Time) (started, ended string) {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	conv, agent := millionID(i), agents[i%len(agents)]
	at := base.Add(time.Duration(i) * 5 * time.Millisecond)
	turns, tools := transcriptOf(i)
	duration := turns[len(turns)-1]["time_in_call_secs"].(int) + 5
	resolved := "success"
	if r.IntN(4) == 0 {
		resolved = "failure"
	}
	data := map[string]any{
		"conversation_id": conv, "agent_id": agent, "call_successful": []string{"success", "success", "failure", "unknown"}[r.IntN(4)],
		"call_duration_secs": duration, "transcript": turns,
		"analysis": map[string]any{
			"transcript_summary": fmt.Sprintf("The caller talked to the agent for %d turns; tools used: %v.", len(turns), tools),
			"evaluation_criteria_results": map[string]any{
				"resolved": map[string]any{"criteria_id": "resolved", "result": resolved, "rationale": "Whether the caller's issue was solved."},
				"polite":   map[string]any{"criteria_id": "polite", "result": "success", "rationale": "The agent stayed polite."},
			},
			"data_collection_results": map[string]any{
				"city":   map[string]any{"data_collection_id": "city", "value": slots["city"][r.IntN(len(slots["city"]))]},
				"amount": map[string]any{"data_collection_id": "amount", "value": r.IntN(1000)},
			},
		},
	}
	s, _ := json.Marshal(map[string]any{"event": "conversation_started", "timestamp": at.UTC().Format(time.RFC3339Nano),
		"data": map[string]any{"conversation_id": conv, "agent_id": agent}})
	e, _ := json.Marshal(map[string]any{"event": "conversation_ended", "timestamp": at.Add(time.Duration(duration) * time.Second).UTC().Format(time.RFC3339Nano), "data": data})
	return string(s), string(e)
}

// rawEventAppends is the ingest's baseline: m conversations' two bodies
// appended by 16 publishers, each acknowledged, to a file stream on the
// platform's server, in appends per second.
func rawEventAppends(natsURL string, m int, bodies func(int) (string, string)) (float64, error) {
	took, err := onRawStream(natsURL, m, func(ctx context.Context, js jetstream.JetStream, i int64) error {
		s, e := bodies(int(i))
		for _, b := range []string{s, e} {
			if _, err := js.Publish(ctx, "benchraw.ws_default.conversation", []byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	return float64(2*m) / took.Seconds(), err
}

// snapshotAge says how far behind the platform stream the conversation
// index's stored snapshot is: what a restart replays.
func snapshotAge(natsURL string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err.Error()
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err.Error()
	}
	str, err := js.Stream(ctx, events.PlatformStream)
	if err != nil {
		return err.Error()
	}
	last := str.CachedInfo().State.LastSeq
	obj, err := js.ObjectStore(ctx, ticketsadapters.SnapshotBucket)
	if err != nil {
		return fmt.Sprintf("no index snapshot (%v); the platform stream holds %d records", err, last)
	}
	info, err := (&ticketsadapters.IndexSnapshots{Obj: obj}).Newest(ctx)
	if err != nil || info == nil {
		return fmt.Sprintf("no index snapshot (%v); the platform stream holds %d records", err, last)
	}
	return fmt.Sprintf("the index snapshot (%d MiB sealed, %s conversations) is at platform record %s of %d",
		info.Size>>20, info.Metadata["conversations"], info.Metadata["platform_seq"], last)
}

// oneConversations is the p50 of GET one conversation (with its
// transcript), for conversations drawn at random across the n.
func (p *platform) oneConversations(n, requests int) (time.Duration, error) {
	r := rand.New(rand.NewPCG(1, 2))
	ds := make([]time.Duration, 0, 2*requests)
	for range 2 * requests {
		conv := millionID(1 + r.IntN(n))
		at := time.Now()
		b, code, err := p.api.Do("GET", "/v1/convai/conversations/"+conv, "", "")
		if err != nil || code != 200 || len(b) < 500 {
			return 0, fmt.Errorf("GET %s: %d %.200s %v", conv, code, b, err)
		}
		ds = append(ds, time.Since(at))
	}
	return median(ds), nil
}

// printDisk says the disk the data directory takes, per one of n units.
func printDisk(data string, n int, unit string) error {
	size, err := dirSize(data)
	if err != nil {
		return err
	}
	fmt.Printf("    disk: %.2f GiB in the data directory = %.2f KiB per %s (NATS %.2f, store %.2f)\n",
		float64(size)/(1<<30), float64(size)/1024/float64(n), unit, subSize(data, "nats")/1024/float64(n), subSize(data, "mongo")/1024/float64(n))
	return nil
}

// dirSize is the bytes the files under dir take on disk.
func dirSize(dir string) (int64, error) {
	var size int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() {
			size += info.Size()
		}
		return nil
	})
	return size, err
}

func subSize(data, sub string) float64 {
	n, _ := dirSize(filepath.Join(data, sub))
	return float64(n)
}
