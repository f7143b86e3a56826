package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
)

// A QA team's tickets, as the million-ticket bench writes them: a title
// and a comment drawn from what reviewers write, the call's specifics in
// them (an order number, an amount, a city), a priority, an issue type,
// labels (one a team uses for every tenth ticket, one for a handful), and
// the life a ticket has: some are worked on, some resolved, some commented
// on. No ticket says "supervisor Osaka": the rare search matches none.
var (
	ticketTitles = []string{
		"Agent quoted the wrong refund window for order {order}",
		"Caller in {city} was transferred twice",
		"Booking change to {day} not confirmed",
		"Agent promised a {amount} dollar voucher it cannot give",
		"Long silence before the agent answered",
		"The {product} warranty answer is outdated",
		"Agent did not verify the caller before sharing the balance",
		"Escalation to the {team} team was not needed",
		"Tool {tool} failed and the agent did not say so",
		"Caller asked for a supervisor three times",
	}
	ticketComments = []string{
		"The agent said refunds take thirty days; the policy says five business days. Order {order}.",
		"Listen from the second minute: the caller repeats the {product} problem and the agent changes the subject.",
		"The agent charged {amount} dollars without reading the amount back.",
		"Good call overall, but the greeting still names the old brand.",
		"The caller from {city} was asked for the same details twice after the transfer.",
		"The knowledge base article on the {plan} plan is missing the new fee.",
	}
	issueTypes = []string{"knowledge_gap", "incorrect_information", "documentation_gap", "product_feedback", "platform_bug", "tool_issue", "unnecessary_escalation", "wrong_action"}
)

// fillTicket replaces a ticket line's slots, a tool's name among them.
func fillTicket(line string, r *rand.Rand) string {
	return fill(strings.ReplaceAll(line, "{tool}", toolNames[r.IntN(len(toolNames))]), r)
}

// millionTicket is ticket i's create body.
func millionTicket(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	labels := []string{[]string{"billing", "delivery", "booking", "tone", "latency"}[r.IntN(5)]}
	if i%10 == 0 {
		labels = append(labels, "weekly-review")
	}
	if i%100_000 == 7 {
		labels = append(labels, "audit") // a label a handful of tickets carry
	}
	b, _ := json.Marshal(map[string]any{
		"title":      fillTicket(ticketTitles[r.IntN(len(ticketTitles))], r),
		"qa_comment": fillTicket(ticketComments[r.IntN(len(ticketComments))], r),
		"priority":   []string{"low", "medium", "medium", "high", "urgent"}[r.IntN(5)],
		"issue_type": issueTypes[r.IntN(len(issueTypes))],
		"labels":     labels,
	})
	return string(b)
}

// (t) n tickets, each created through the gateway as a QA team does
// (16 clients), a third then moved on (in progress, resolved)
// and one in ten commented on; against raw JetStream appends of the same
// size. Then the disk used, the platform's peak memory, the listing's
// p50 under each filter, one ticket's, and a restart after a crash.
// Alone: `go run ./services/allinone/ticketsbench -section million-tickets
// -tickets N`.
//
// With a data directory (keep) the data stays there; run again on it, the
// section measures the restart alone (with -profile, its profile): the
// way to work on a restart without an ingest each time.
func runMillionTickets(n, requests int, keep string) error {
	run, cleanup, err := newLargeRun("voiceai-ticketsbench-million-tickets-", "memory", keep)
	if err != nil {
		return err
	}
	defer cleanup()
	if run.kept != "" {
		return restartTickets(run.start, run.restartProfile, run.kept, 0, requests)
	}
	p, err := run.start("")
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	agents, err := p.agents(5)
	if err != nil {
		return err
	}
	fmt.Printf("(t) %d tickets through the gateway, a third then changed and a tenth commented on, GOMEMLIMIT=%s (platform as its own process, 2 cores shared with this client)\n", n, millionGoMemLimit)

	raw, err := rawAppends(p.NATSURL, min(n, 20_000))
	if err != nil {
		return err
	}
	began := time.Now()
	var writes atomic.Int64
	took, err := inParallelShowingProgress(n, "tickets created", func(i int64) error {
		id, err := p.createTicket(agents[int(i)%len(agents)], millionTicket(int(i)), "")
		if err != nil {
			return err
		}
		writes.Add(1)
		write := func(method, path, body string) {
			if err == nil {
				if err = p.write(method, path, body); err == nil {
					writes.Add(1)
				}
			}
		}
		path := "/v1/convai/triage-tickets/" + id
		switch i % 6 {
		case 1:
			write("PATCH", path, `{"status":"in_progress"}`)
		case 3:
			write("PATCH", path, `{"status":"resolved"}`)
		}
		if i%10 == 5 {
			write("POST", path+"/comments", `{"comment":"Checked the recording: confirmed, the agent needs the updated policy."}`)
		}
		return err
	})
	if err != nil {
		return err
	}
	rate := float64(writes.Load()) / took.Seconds()
	if err := p.waitTicketsConsumers(time.Hour); err != nil {
		return err
	}
	fmt.Printf("    ingest: about %d writes in %s = %.0f/s (%.0f tickets/s) vs raw optimistic appends %.0f/s = %.3f; the consumers of TICKETS caught up %s after the first\n",
		writes.Load(), took.Round(time.Second), rate, float64(n)/took.Seconds(), raw, rate/raw, time.Since(began).Round(time.Second))
	if err := printDisk(run.data, n, "ticket"); err != nil {
		return err
	}
	peak := p.PeakRSSKiB()
	if err := p.ticketReads(agents, requests); err != nil {
		return err
	}

	// A crash, then a start on the same data: ready once the first listing
	// answers with the newest ticket.
	newest, err := p.get("/v1/convai/triage-tickets?page_size=1")
	if err != nil || len(newest.Tickets) != 1 {
		return fmt.Errorf("the newest ticket: %v", err)
	}
	p.Kill()
	if err := run.crashed(newest.Tickets[0].ID); err != nil {
		return err
	}
	return restartTickets(run.start, run.restartProfile, newest.Tickets[0].ID, peak, 0)
}

// ticketReads measures the listing's p50 under each filter and search,
// and one ticket's.
func (p *platform) ticketReads(agents []string, requests int) error {
	filters := []struct{ name, query string }{
		{"none", ""},
		{"by priority", "sort_by=priority"},
		{"agent", "agent_id=" + agents[2]},
		{"status+priority", "status=in_progress&priorities=urgent"},
		{"issue_type", "issue_type=tool_issue"},
		{"label (a tenth)", "label=weekly-review"},
		{"label (a handful)", "label=audit"},
		{"unassigned", "assignee_user_id=unassigned&status=open"},
		{"search (common)", "search=refund"},
		{"search (rare)", "search=supervisor+Osaka"},
		{"several at once", "agent_id=" + agents[1] + "&status=open&priorities=high&label=billing"},
	}
	// A filter few tickets match answers a short page.
	if err := p.listingsUnder(requests, "/v1/convai/triage-tickets?page_size=100&", filters, 0); err != nil {
		return err
	}
	one, err := p.oneTickets(requests)
	if err != nil {
		return err
	}
	fmt.Printf("    one ticket (random ones), p50 %s (goal < %s: %s)\n", one.Round(10*time.Microsecond), millionOneGoal, benchkit.Verdict(one < millionOneGoal))
	return nil
}

// newestFile, in a kept data directory, names the newest ticket.
const newestFile = "ticketsbench-newest"

// restartTickets starts the platform on the data of a run stopped by a
// crash, and measures how long until the first listing answers with the
// newest ticket; then, given requests, the reads (a restart measured
// alone, on a kept run's data).
func restartTickets(start func(profile string, env ...string) (*platform, error), profile, newest string, peak int64, requests int) error {
	restarted := time.Now()
	p, err := start(profile)
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := p.waitFor("/v1/convai/triage-tickets?page_size=1", 10*time.Minute, func(b []byte) bool {
		var pg page
		return json.Unmarshal(b, &pg) == nil && len(pg.Tickets) == 1 && pg.Tickets[0].ID == newest
	}); err != nil {
		return err
	}
	printRestart("the newest ticket listed", time.Since(restarted), peak, p.PeakRSSKiB())
	if requests == 0 {
		return nil
	}
	agents, err := p.agents(5)
	if err != nil {
		return err
	}
	return p.ticketReads(agents, requests)
}

// agents are the bench's agent and n-1 more, made on the first call.
func (p *platform) agents(n int) ([]string, error) {
	agents := []string{p.agentID}
	for i := 1; i < n; i++ {
		id, err := p.api.CreateAgent(`{"name":"Bench `+strconv.Itoa(i)+`"}`, "bench-agent-"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		agents = append(agents, id)
	}
	return agents, nil
}

// write sends one change and wants a 200.
func (p *platform) write(method, path, body string) error {
	b, code, err := p.api.Do(method, path, body, "")
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("%s %s: %d %.200s %v", method, path, code, b, err)
	}
	return nil
}

// oneTickets is the p50 of GET one ticket, for tickets drawn from pages
// across the workspace.
func (p *platform) oneTickets(requests int) (time.Duration, error) {
	var ids []string
	cursor := ""
	for len(ids) < 2*requests {
		pg, err := p.get("/v1/convai/triage-tickets?page_size=100&cursor=" + url.QueryEscape(cursor))
		if err != nil {
			return 0, err
		}
		for _, t := range pg.Tickets {
			ids = append(ids, t.ID)
		}
		if pg.NextCursor == "" {
			break
		}
		cursor = pg.NextCursor
	}
	r := rand.New(rand.NewPCG(3, 4))
	ds := make([]time.Duration, 0, 2*requests)
	for range 2 * requests {
		id := ids[r.IntN(len(ids))]
		at := time.Now()
		if b, code, err := p.api.Do("GET", "/v1/convai/triage-tickets/"+id, "", ""); err != nil || code != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %d %.200s %v", id, code, b, err)
		}
		ds = append(ds, time.Since(at))
	}
	return median(ds), nil
}

// buildPlatform builds the all-in-one binary into a temporary directory
// and names its data directory there; cleanup removes both.
func buildPlatform(prefix string) (bin, data string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bins, err := benchproc.Build(dir, "./services/allinone")
	if err != nil {
		cleanup()
		return "", "", nil, err
	}
	return bins["allinone"], filepath.Join(dir, "data"), cleanup, nil
}

// largeRun is what a million section starts its platform with: the
// binary, built once; the data, in a temporary directory or in keep
// (-data); a restart's CPU profile when -profile is set. kept is the
// newest record of a finished run found in keep: the restart alone is to
// be measured.
type largeRun struct {
	start                            func(profile string, env ...string) (*platform, error)
	data, keep, kept, restartProfile string
}

func newLargeRun(prefix, readIndex, keep string) (run largeRun, cleanup func(), err error) {
	bin, data, cleanup, err := buildPlatform(prefix)
	if err != nil {
		return run, nil, err
	}
	if keep != "" {
		data = keep
		if newest, err := os.ReadFile(filepath.Join(keep, newestFile)); err == nil {
			run.kept = string(newest)
		}
	}
	run.data, run.keep = data, keep
	run.start = func(profile string, env ...string) (*platform, error) {
		return startLarge(bin, data, readIndex, profile, env...)
	}
	if profileFile != "" {
		run.restartProfile = profileFile + ".restart"
	}
	return run, cleanup, nil
}

// crashed notes, in a kept data directory, the newest record of the run
// just killed.
func (r largeRun) crashed(newest string) error {
	if r.keep == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(r.keep, newestFile), []byte(newest), 0o600)
}

// startLarge starts the platform for a million-record section: its read
// index, the memory limit of millionGoMemLimit, a CPU profile of its
// start to profile when set; and makes (or finds again) the bench's agent.
func startLarge(bin, data, readIndex, profile string, extra ...string) (*platform, error) {
	// The Go runtime may hold the heap up to the memory goal before it
	// collects harder (the all-in-one default, 640 MiB, is for a small
	// deployment: past it the collector would take the CPU the ingest needs).
	env := append([]string{"VOICEAI_READ_INDEX=" + readIndex, "GOMEMLIMIT=" + millionGoMemLimit}, extra...)
	metrics, err := benchproc.FreePort() // the profiler's endpoint, for -profile
	if err != nil {
		return nil, err
	}
	if profile != "" {
		go profileStart(metrics, profile)
	}
	bp, err := benchproc.StartPlatform(bin, data, adminKey, metrics, 10*time.Minute, env...)
	if err != nil {
		return nil, err
	}
	p := &platform{Platform: bp, api: benchkit.NewClient(bp.Base, adminKey, clients)}
	p.agentID, err = p.api.CreateAgent(`{"name":"Bench"}`, "bench-agent")
	return p, err
}
