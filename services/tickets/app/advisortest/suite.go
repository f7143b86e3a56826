// Package advisortest is the conformance suite of app.ClusterAdvisor:
// every implementation (a chat model over HTTP, a scripted one in
// memory) shows the model the ticket and its candidates, hands back its
// judgement as it gave it, and says when it could not get one, so that
// clustering falls back to the rules.
package advisortest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Mind is what the model behind an advisor thinks of a ticket and its
// candidates (an error: it could not answer).
type Mind func(ticket domain.ClusterItem, candidates []domain.ClusterItem) (app.ClusterAdvice, error)

// Opener opens an advisor whose model thinks mind.
type Opener func(t *testing.T, mind Mind) app.ClusterAdvisor

func item(id, text string) domain.ClusterItem {
	return domain.ClusterItem{ID: id, CreatedAtMs: 1_800_000_000_000, Headline: text, Text: text}
}

// shown is what the model was shown: the ticket's id and text, and each
// candidate's.
type shown struct {
	mu    sync.Mutex
	asked []string
}

func (s *shown) record(t domain.ClusterItem, cs []domain.ClusterItem) {
	line := t.ID + ": " + t.Text + " |"
	for _, c := range cs {
		line += " " + c.ID + ": " + c.Text + ";"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, line)
}

func (s *shown) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

// Run checks open against what app.ClusterAdvisor promises.
func Run(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("the model is shown the ticket and its candidates, and its judgement comes back", func(t *testing.T) {
		var seen shown
		adv := open(t, func(tk domain.ClusterItem, cs []domain.ClusterItem) (app.ClusterAdvice, error) {
			seen.record(tk, cs)
			var similar []string
			for _, c := range cs {
				if strings.Contains(c.Text, "refund") {
					similar = append(similar, c.ID)
				}
			}
			return app.ClusterAdvice{SimilarTo: similar, IssueType: "knowledge_gap", Reason: "Both callers want their money back."}, nil
		})
		got, err := adv.Advise(ctx, item("tkt_new", "The caller wants a refund"), []domain.ClusterItem{
			item("tkt_1", "Refused a refund of a cancelled booking"), item("tkt_2", "Asked about parking"), item("tkt_3", "Another refund request"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.SimilarTo, []string{"tkt_1", "tkt_3"}) || got.IssueType != "knowledge_gap" || got.Reason != "Both callers want their money back." {
			t.Fatalf("advice %+v", got)
		}
		want := "tkt_new: The caller wants a refund | tkt_1: Refused a refund of a cancelled booking; tkt_2: Asked about parking; tkt_3: Another refund request;"
		if asked := seen.all(); len(asked) != 1 || asked[0] != want {
			t.Fatalf("the model was shown %q, want once %q", asked, want)
		}
	})

	t.Run("no candidates, no similar ticket, no issue type", func(t *testing.T) {
		var seen shown
		adv := open(t, func(tk domain.ClusterItem, cs []domain.ClusterItem) (app.ClusterAdvice, error) {
			seen.record(tk, cs)
			return app.ClusterAdvice{Reason: "Nothing to compare with."}, nil
		})
		got, err := adv.Advise(ctx, item("tkt_alone", "Greeting was cut off"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.SimilarTo) != 0 || got.IssueType != "" || got.Reason != "Nothing to compare with." {
			t.Fatalf("advice %+v", got)
		}
		if asked := seen.all(); len(asked) != 1 || asked[0] != "tkt_alone: Greeting was cut off |" {
			t.Fatalf("the model was shown %q", asked)
		}
	})

	t.Run("a model that cannot answer is an error", func(t *testing.T) {
		adv := open(t, func(domain.ClusterItem, []domain.ClusterItem) (app.ClusterAdvice, error) {
			return app.ClusterAdvice{}, errors.New("this model does not do parking")
		})
		if got, err := adv.Advise(ctx, item("tkt_p", "Parking near the restaurant"), []domain.ClusterItem{item("tkt_1", "Parking")}); err == nil {
			t.Fatalf("no error, advice %+v", got)
		}
	})

	t.Run("the name says which model decided, the same each time", func(t *testing.T) {
		adv := open(t, func(domain.ClusterItem, []domain.ClusterItem) (app.ClusterAdvice, error) {
			return app.ClusterAdvice{}, nil
		})
		if n := adv.Name(); n == "" || n != adv.Name() || strings.ContainsAny(n, " \n") {
			t.Fatalf("name %q", n)
		}
	})
}
