package judgeeval

import (
	"strings"
	"testing"
)

// Every case of the shipped sets is well-formed (Parse checks each:
// known category and label, 1–3 non-empty conditions, a reply, no
// unknown field); ids are unique across the sets; each set is large
// enough and has both labels in every category.
func TestSetsAreWellFormed(t *testing.T) {
	ids := map[string]string{}
	for _, s := range []struct {
		name     string
		min      int
		minInCat int
	}{{Labelled, 170, 12}, {Heldout, 60, 2}, {Heldout2, 90, 10}, {Heldout3, 100, 10}} {
		cases, err := Set(s.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) < s.min {
			t.Errorf("%s: %d cases, want at least %d", s.name, len(cases), s.min)
		}
		labels := map[string]map[string]int{}
		passes := 0
		for _, c := range cases {
			if other, dup := ids[c.ID]; dup {
				t.Errorf("%s: id %q is also in %s", s.name, c.ID, other)
			}
			ids[c.ID] = s.name
			if labels[c.Category] == nil {
				labels[c.Category] = map[string]int{}
			}
			labels[c.Category][c.Label]++
			if c.Passes() {
				passes++
			}
		}
		for _, cat := range Categories {
			l := labels[cat]
			if l[Pass] == 0 || l[Fail] == 0 || l[Pass]+l[Fail] < s.minInCat {
				t.Errorf("%s: category %s has %d pass and %d fail cases, want both labels and %d in all", s.name, cat, l[Pass], l[Fail], s.minInCat)
			}
		}
		// Roughly half pass: a judge that always says one thing scores near 0.5.
		if share := float64(passes) / float64(len(cases)); share < 0.4 || share > 0.6 {
			t.Errorf("%s: %.2f of cases pass, want roughly half", s.name, share)
		}
	}
	// The two anchor cases are in the set with their labels.
	cases, _ := Set(Labelled)
	anchors := map[string]string{
		"bring it back within a month with your till slip":                   Pass,
		"refunds are possible within 30 days, and you do not need a receipt": Fail,
	}
	for _, c := range cases {
		for reply, label := range anchors {
			if strings.Contains(strings.ToLower(c.Reply), reply) && c.Label == label &&
				strings.Contains(c.Conditions[0], "refund is possible within 30 days with a receipt") {
				delete(anchors, reply)
			}
		}
	}
	for reply, label := range anchors {
		t.Errorf("anchor case %q (%s) missing", reply, label)
	}
}

func TestParseRejectsMalformedCases(t *testing.T) {
	good := `{"id":"a","category":"exact","user":"","conditions":["The agent says hi"],"reply":"Hi","label":"pass","why":"says hi"}`
	for name, in := range map[string]string{
		"unknown category": strings.Replace(good, `"exact"`, `"vibes"`, 1),
		"unknown label":    strings.Replace(good, `"pass"`, `"maybe"`, 1),
		"empty reply":      strings.Replace(good, `"Hi"`, `" "`, 1),
		"no condition":     strings.Replace(good, `["The agent says hi"]`, `[]`, 1),
		"empty condition":  strings.Replace(good, `["The agent says hi"]`, `[""]`, 1),
		"four conditions":  strings.Replace(good, `["The agent says hi"]`, `["a","b","c","d"]`, 1),
		"unknown field":    strings.Replace(good, `"why"`, `"wyh"`, 1),
		"duplicate id":     good + "\n" + good,
		"not JSON":         "{",
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	cases, err := Parse(strings.NewReader("\n" + good + "\n\n"))
	if err != nil || len(cases) != 1 || cases[0].ID != "a" {
		t.Errorf("good case: %v %+v", err, cases)
	}
}
