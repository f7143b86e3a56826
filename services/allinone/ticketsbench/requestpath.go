package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
)

// requestPathAlone splits the creates figure of (a) in two. Every create
// is also handed to each durable consumer of TICKETS (with the memory
// index: the QA worker's clustering, the webhook fan-out), which on a machine of two cores run beside the requests on
// the same CPUs. So (a) runs createRounds rounds more, each beside one of
// the floor, with those consumers paused (a JetStream consumer pause: the
// stream keeps every create, nothing is skipped), then resumes them and
// times their catch-up. The replica's own follower, an ordered consumer,
// is not paused: a replica's index follows the stream. The goal's verdict
// stays with (a): this says what the request path does alone, and what
// the consumers cost it.
func (p *platform) requestPathAlone(floor *floorProcess, per int) error {
	return p.WithJetStream(func(js jetstream.JetStream) error {
		ctx := context.Background()
		durables, err := durablesOf(ctx, js, events.TicketsStream)
		if err != nil {
			return err
		}
		for _, d := range durables {
			if _, err := js.PauseConsumer(ctx, events.TicketsStream, d, time.Now().Add(10*time.Minute)); err != nil {
				return fmt.Errorf("pause %s: %w", d, err)
			}
		}
		resumed := false
		resume := func() error {
			resumed = true
			for _, d := range durables {
				if _, err := js.ResumeConsumer(ctx, events.TicketsStream, d); err != nil {
					return fmt.Errorf("resume %s: %w", d, err)
				}
			}
			return nil
		}
		defer func() {
			if !resumed {
				_ = resume()
			}
		}()
		var toFloor []float64
		for r := range createRounds {
			floorRate, _, err := floor.rate(int64((createRounds+r)*per), per)
			if err != nil {
				return err
			}
			rate, err := p.createThroughGateway("alone-"+strconv.Itoa(r)+"-", per)
			if err != nil {
				return err
			}
			toFloor = append(toFloor, rate/floorRate)
		}
		start := time.Now()
		if err := resume(); err != nil {
			return err
		}
		if err := p.waitProjected(5*time.Minute, events.TicketsStream, durables...); err != nil {
			return err
		}
		caughtUp := time.Since(start)
		n := createRounds * per
		fmt.Printf("    the request path alone: with the %d durable consumers of TICKETS (%s) paused for %d rounds more, the gateway does %.3f of the floor (rounds %s; 1/3 reached: %s); resumed, they caught up on those %d creates in %s (%.0f/s)\n",
			len(durables), strings.Join(durables, ", "), createRounds, median(toFloor), spread(toFloor), yesNo(median(toFloor) >= 1.0/3), n, caughtUp.Round(time.Millisecond), float64(n)/caughtUp.Seconds())
		return nil
	})
}

// durablesOf names the durable consumers of stream, ordered consumers
// (ephemeral: a replica following the stream to keep its index) left out.
func durablesOf(ctx context.Context, js jetstream.JetStream, stream string) ([]string, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	var durables []string
	infos := s.ListConsumers(ctx)
	for info := range infos.Info() {
		if info.Config.Durable != "" {
			durables = append(durables, info.Name)
		}
	}
	return durables, infos.Err()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
