package main

import (
	"fmt"
	"time"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
)

// listingSizes is (c): the ticket listings' p50 at 1,000, 10,000 and the
// largest workspace, whose ratio says whether a page costs the page or
// the collection.
type listingSizes struct {
	sizes []int
	lat   []map[string]time.Duration
	// held is how many tickets the workspace held when each size was
	// measured: at least the size, more where (a) and (b) created more.
	held []int
	// cpu is the platform's CPU time a listing request, each size.
	cpu []time.Duration
}

func newListingSizes(largest int) *listingSizes {
	sizes := []int{1000, 10_000, largest}
	return &listingSizes{sizes: sizes, lat: make([]map[string]time.Duration, 3), held: make([]int, 3), cpu: make([]time.Duration, 3)}
}

// measure seeds the workspace to size i and measures its listings once
// the platform is quiet.
func (c *listingSizes) measure(p *platform, i, requests int) error {
	if err := p.seedTo(c.sizes[i]); err != nil {
		return err
	}
	c.held[i] = p.seeded
	if err := p.waitQuiet(); err != nil {
		return err
	}
	before := benchproc.UsageOf(p.Cmd.Process.Pid)
	lat, err := p.listings(requests)
	if err != nil {
		return err
	}
	c.lat[i] = lat
	c.cpu[i] = benchproc.UsageOf(p.Cmd.Process.Pid).Minus(before).CPU / time.Duration(requests*len(listingKinds))
	return nil
}

func (c *listingSizes) print() {
	fmt.Println("(c) listing p50 (page of 100):")
	last := len(c.sizes) - 1
	for _, kind := range listingKinds {
		fmt.Printf("    %-9s", kind.name)
		for i := range c.sizes {
			fmt.Printf("  %7d tickets %8s", c.held[i], c.lat[i][kind.name].Round(10*time.Microsecond))
		}
		small, ten, big := c.lat[0][kind.name], c.lat[1][kind.name], c.lat[last][kind.name]
		r := float64(big) / float64(small)
		fmt.Printf("   %d/%d = %.2f (goal <= 2: %s), at 10,000 < 50ms: %s\n", c.sizes[last], c.sizes[0], r, benchkit.Verdict(r <= 2), benchkit.Verdict(ten < 50*time.Millisecond))
	}
	fmt.Printf("    the platform's CPU a listing request (all kinds):")
	for i := range c.sizes {
		fmt.Printf("  %d tickets %s", c.held[i], c.cpu[i].Round(time.Microsecond))
	}
	fmt.Println()
}

// waitQuiet waits, up to a minute, until the platform uses under a tenth
// of a CPU for half a second: what a seed left it to do (its collector
// after the heap grew, the webhooks' fan-out and the QA feed reading the
// new tickets) is done, so a listing's p50 is the listing's and not that
// work's. The consumers of TICKETS seedTo has waited for.
func (p *platform) waitQuiet() error {
	const window, share = 500 * time.Millisecond, 0.1
	start := time.Now()
	for {
		before := benchproc.UsageOf(p.Cmd.Process.Pid)
		time.Sleep(window)
		used := benchproc.UsageOf(p.Cmd.Process.Pid).Minus(before).CPU
		if float64(used) < share*float64(window) {
			fmt.Printf("    quiet (under %.0f%% of a CPU over %s) %s after the seed\n", share*100, window, time.Since(start).Round(time.Millisecond))
			return nil
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("the platform still used %s of CPU in %s a minute after the seed", used, window)
		}
	}
}
