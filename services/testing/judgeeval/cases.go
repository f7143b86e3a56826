// Package judgeeval measures a judge against people: a human-labelled set
// of agent replies (testdata/, policy in LABELLING.md) is run through any
// runner.Model's judge, and its verdicts are scored against the labels:
// agreement, Cohen's κ, true-pass, true-fail and false-pass rates with 95%
// intervals, per category too, the time per decision and the memory the
// judge's resources add.
package judgeeval

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Labels of a case: what a careful reviewer decided.
const (
	Pass = "pass"
	Fail = "fail"
)

// Categories are the kinds of exchange a set covers, each a way a judge
// that reads words rather than meaning goes wrong.
var Categories = []string{
	"exact",      // the condition's own words
	"paraphrase", // synonyms, other phrasing, British/American words
	"negation",   // the condition's words negated; negative conditions
	"numbers",    // wrong numbers; one quantity written two ways
	"partial",    // a multi-part condition with a part missing, or all there
	"refusal",    // the agent declines or cannot find the answer
	"deflection", // changes the subject, asks to call back, "it depends"
	"distractor", // many of the condition's words, something else stated
	"extra",      // the right answer plus more
}

// Case is one labelled exchange: the caller's last message, the test's
// success conditions (all must hold), the agent's reply and the label.
type Case struct {
	ID         string   `json:"id"`
	Category   string   `json:"category"`
	User       string   `json:"user"`
	Conditions []string `json:"conditions"`
	Reply      string   `json:"reply"`
	Label      string   `json:"label"`
	Why        string   `json:"why"`
}

// Passes reports whether people said the reply meets its conditions.
func (c Case) Passes() bool { return c.Label == Pass }

// Validate checks the case is well-formed: an id, a known category and
// label, one to three non-empty conditions and a non-empty reply.
func (c Case) Validate() error {
	switch {
	case strings.TrimSpace(c.ID) == "":
		return errors.New("no id")
	case !slices.Contains(Categories, c.Category):
		return fmt.Errorf("%s: unknown category %q", c.ID, c.Category)
	case c.Label != Pass && c.Label != Fail:
		return fmt.Errorf("%s: label %q, want %q or %q", c.ID, c.Label, Pass, Fail)
	case len(c.Conditions) < 1 || len(c.Conditions) > 3:
		return fmt.Errorf("%s: %d conditions, want 1 to 3", c.ID, len(c.Conditions))
	case strings.TrimSpace(c.Reply) == "":
		return fmt.Errorf("%s: empty reply", c.ID)
	}
	for _, cond := range c.Conditions {
		if strings.TrimSpace(cond) == "" {
			return fmt.Errorf("%s: empty condition", c.ID)
		}
	}
	return nil
}

// Parse reads a JSONL set, one case a line (blank lines skipped): every
// case valid, no unknown field, no id twice.
func Parse(r io.Reader) ([]Case, error) {
	var cases []Case
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields() // a misspelt field would silently drop a label
		var c Case
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("line %d: id %q twice", line, c.ID)
		}
		seen[c.ID] = true
		cases = append(cases, c)
	}
	return cases, sc.Err()
}

//go:embed testdata/labelled.jsonl testdata/heldout.jsonl testdata/heldout2.jsonl testdata/heldout3.jsonl
var sets embed.FS

// The sets shipped with the package: Labelled is the main set, Heldout
// was written after it, in other domains and phrasings, so that a judge
// tuned on the first can be checked on cases it has not seen; Heldout2
// was written after the offline judge was rewritten (offline-v2), by a
// reviewer who had not seen it, in domains and phrasings neither other
// set uses; Heldout3 was written before the offline judge's next change,
// by a reviewer who had not seen it, in domains and phrasings none of the
// other sets uses.
const (
	Labelled = "labelled"
	Heldout  = "heldout"
	Heldout2 = "heldout2"
	Heldout3 = "heldout3"
)

// Set loads a shipped set by name (Labelled, Heldout, Heldout2 or Heldout3).
func Set(name string) ([]Case, error) {
	b, err := sets.ReadFile("testdata/" + name + ".jsonl")
	if err != nil {
		return nil, fmt.Errorf("judge set %q: %w", name, err)
	}
	cases, err := Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("judge set %q: %w", name, err)
	}
	return cases, nil
}
