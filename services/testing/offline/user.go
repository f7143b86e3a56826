package offline

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// The offline simulated user plays a simulation_scenario without
// understanding it, deterministically:
//
//   - The scenario is split into sentences (at . ! ? and line ends,
//     bullets dropped). A goal sentence says what the user wants ("The
//     caller wants to book a table", "You need …", "would like", "hopes
//     to", "is trying to", "Goal: …"); an ask sentence says what they ask
//     ("Then asks about the refund policy", "requests …", "wants to know
//     …", or a literal question ending in ?). Other sentences (the
//     persona: "You are Ann, a busy nurse.") are not said. A scenario
//     with neither is said sentence by sentence.
//   - The user's first message is the goal sentences, then each ask
//     sentence in the scenario's order is one message; each is put in the
//     first person ("The caller wants to book a table for her family" →
//     "I want to book a table for my family."; "asks about X" → "Can you
//     tell me about X?"; "asks the agent to X" → "Could you X?").
//   - After each agent turn the user looks at what the agent said since
//     its last message: when it contains at least half of the current
//     request's content words (the judge's stemmed words), the request is
//     covered and the user makes the next one; when it is not, the user
//     says it once more ("Sorry, that doesn't answer my question. …"),
//     then moves on anyway. Once the requests run out the user ends the
//     conversation with "Thank you, that's all.".
//
// It cannot improvise: it never answers the agent's questions (a
// booking agent asking for a date gets the next request, not a date
// unless the scenario's request stated it), and it does not notice a
// wrong answer that shares the request's words.

// offlineUserDone is the offline user's last message.
const offlineUserDone = "Thank you, that's all."

// offlineRepeat prefixes a request the agent did not cover.
const offlineRepeat = "Sorry, that doesn't answer my question. "

// SimulateUser plays the user of a simulation test.
func (Model) SimulateUser(_ context.Context, in model.UserInput) (model.UserTurn, model.Usage, error) {
	reqs := offlineRequests(in.Scenario)
	usage := model.Usage{PromptTokens: int64(len(strings.Fields(in.Scenario))), Calls: 1}
	out := offlineUserTurn(reqs, in.Transcript)
	usage.CompletionTokens = int64(len(strings.Fields(out.Text)))
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	return out, usage, nil
}

func offlineUserTurn(reqs []string, turns []model.Turn) model.UserTurn {
	// Where the user is: the last request it made, and whether it was
	// a repetition.
	cur, repeated, last := -1, false, -1
	for i, t := range turns {
		if t.Role != "user" {
			continue
		}
		for j, q := range reqs {
			switch t.Text {
			case q:
				cur, repeated, last = j, false, i
			case offlineRepeat + q:
				cur, repeated, last = j, true, i
			}
		}
	}
	if cur < 0 {
		if len(reqs) == 0 {
			return model.UserTurn{Text: offlineUserDone, Done: true}
		}
		return model.UserTurn{Text: reqs[0]}
	}
	var said strings.Builder
	for _, t := range turns[last+1:] {
		if t.Role == "agent" {
			said.WriteString(t.Text)
			said.WriteString(" ")
		}
	}
	if !covers(said.String(), reqs[cur]) && !repeated {
		return model.UserTurn{Text: offlineRepeat + reqs[cur]}
	}
	if cur+1 < len(reqs) {
		return model.UserTurn{Text: reqs[cur+1]}
	}
	return model.UserTurn{Text: offlineUserDone, Done: true}
}

// covers reports whether text contains at least half of the request's
// content words.
func covers(text, request string) bool {
	have := stemSet(text)
	found, total := 0, 0
	for _, t := range contentTerms(request, conditionStopwords) {
		total++
		if have[t.stem] {
			found++
		}
	}
	return found*2 >= total
}

var (
	goalLabel = regexp.MustCompile(`(?i)^(goal|task|objective|intent)\s*:\s*`)
	// askCue: the rest of the sentence after it is asked.
	askCue = regexp.MustCompile(`(?i)\b(?:asks?|asked|asking|requests?|inquires?|enquires?|wonders?|(?:wants?|needs?|would like|'d like) to (?:know|find out|check)|finds? out)\b(?:\s+(?:the\s+agent|the\s+assistant|them|you|him|her))?\s*`)
	// goalCue: the rest of the sentence after it is wanted.
	goalCue = regexp.MustCompile(`(?i)\b(?:wants?|wanted|needs?|would like|'d like|wish(?:es)?|hopes?|(?:is|are) hoping|(?:is|are) trying|tries|(?:is|are) looking|looks)\b\s*`)
)

// offlineRequests is what the offline user says, in order: the goal
// sentences together, then each ask sentence.
func offlineRequests(scenario string) []string {
	var goals, asks, all []string
	for _, line := range strings.Split(scenario, "\n") {
		for _, s := range splitSentences(stripLabel(stripBullet(strings.TrimSpace(line)))) {
			if len(contentTerms(s, nil)) == 0 {
				continue
			}
			all = append(all, sayAsWritten(s))
			// "wants to cancel her booking and asks whether …": the goal,
			// then the ask.
			if g, a := goalCue.FindStringIndex(s), askCue.FindStringIndex(s); g != nil && a != nil && g[0] < a[0] &&
				!strings.Contains(strings.ToLower(s[a[0]:a[1]]), " to ") {
				goal := strings.TrimSuffix(strings.TrimRight(s[:a[0]], " ,;"), " and")
				goals = append(goals, firstPerson(goal))
				asks = append(asks, firstPerson(s[a[0]:]))
				continue
			}
			switch {
			case goalLabel.MatchString(s):
				if g := goalLabel.ReplaceAllString(s, ""); g != "" {
					goals = append(goals, sayAsWritten(g))
				}
			case askCue.MatchString(s) || strings.HasSuffix(s, "?"):
				q := firstPerson(s)
				if strings.HasPrefix(q, "I want") || strings.HasPrefix(q, "I need") || strings.HasPrefix(q, "I'd like") {
					goals = append(goals, q) // "wants to know …" is the goal
				} else {
					asks = append(asks, q)
				}
			case goalCue.MatchString(s):
				goals = append(goals, firstPerson(s))
			}
		}
	}
	if len(goals)+len(asks) == 0 {
		return all
	}
	if len(goals) == 0 {
		return asks
	}
	return append([]string{strings.Join(goals, " ")}, asks...)
}

// wantVerb is how the user says a goal cue ("needs", "would like",
// "is looking") in the first person.
func wantVerb(cue string) string {
	switch {
	case strings.HasPrefix(cue, "need"):
		return "I need"
	case strings.Contains(cue, "like"):
		return "I'd like"
	case strings.Contains(cue, "looking"), strings.HasPrefix(cue, "look"):
		return "I'm looking"
	}
	return "I want"
}

// firstPerson turns a scenario sentence into what the user says.
func firstPerson(s string) string {
	s = strings.TrimSpace(s)
	if loc := askCue.FindStringSubmatchIndex(s); loc != nil {
		cue := strings.ToLower(s[loc[0]:loc[1]])
		if q := strings.TrimSpace(s[loc[1]:]); strings.HasPrefix(q, ":") || strings.HasPrefix(q, `"`) || strings.HasPrefix(q, "“") {
			return sayAsWritten(strings.Trim(strings.TrimLeft(q, ": "), `"“”`)) // asks: "What …?" is said as written
		}
		rest := trimEnd(pronouns(s[loc[1]:]))
		lower := strings.ToLower(rest)
		switch {
		case strings.Contains(cue, " to "): // wants to know …
			return wantVerb(cue) + " to " + strings.TrimSpace(cue[strings.Index(cue, " to ")+4:]) + " " + rest + "."
		case rest == "":
		case strings.HasPrefix(lower, "about "):
			return "Can you tell me " + rest + "?"
		case strings.HasPrefix(lower, "for "):
			return "Could I get " + rest[4:] + "?"
		case strings.HasPrefix(lower, "to "):
			return "Could you " + rest[3:] + "?"
		default:
			return "Can you tell me " + rest + "?"
		}
	}
	if loc := goalCue.FindStringIndex(s); loc != nil {
		cue := strings.ToLower(strings.TrimSpace(s[loc[0]:loc[1]]))
		rest := trimEnd(pronouns(s[loc[1]:]))
		if rest == "" {
			return sayAsWritten(s)
		}
		return wantVerb(cue) + " " + rest + "."
	}
	return sayAsWritten(s)
}

// sayAsWritten is a sentence with a capital and final punctuation.
func sayAsWritten(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.ContainsAny(s[len(s)-1:], ".!?") {
		s += "."
	}
	return s
}

func trimEnd(s string) string { return strings.TrimRight(strings.TrimSpace(s), ".!?;, ") }

var thirdPerson = map[string]string{
	"your": "my", "yours": "mine", "his": "my", "her": "my", "their": "my", "theirs": "mine",
	"he": "I", "she": "I", "they": "I", "him": "me", "them": "me",
	"yourself": "myself", "himself": "myself", "herself": "myself", "themselves": "myself", "themself": "myself",
}

var wordRE = regexp.MustCompile(`[A-Za-z]+`)

var iVerb = regexp.MustCompile(`\bI [a-z]+\b`)

// pronouns puts the user's own things in the first person ("her order"
// → "my order", "she gets" → "I get").
func pronouns(s string) string {
	s = wordRE.ReplaceAllStringFunc(s, func(w string) string {
		if r, ok := thirdPerson[strings.ToLower(w)]; ok {
			return r
		}
		return w
	})
	return iVerb.ReplaceAllStringFunc(s, func(m string) string {
		v := m[2:]
		switch {
		case v == "is":
			v = "am"
		case v == "has":
			v = "have"
		case v == "does":
			v = "do"
		case v == "was", len(v) < 4, strings.HasSuffix(v, "ss"), strings.HasSuffix(v, "us"):
		case strings.HasSuffix(v, "ies"):
			v = v[:len(v)-3] + "y"
		case strings.HasSuffix(v, "shes"), strings.HasSuffix(v, "ches"), strings.HasSuffix(v, "xes"), strings.HasSuffix(v, "oes"):
			v = v[:len(v)-2]
		case strings.HasSuffix(v, "s"):
			v = v[:len(v)-1]
		}
		return "I " + v
	})
}
