package offline

import (
	"context"
	"fmt"
	"strings"

	"github.com/voiceai-platform/voiceai/services/testing/model"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// OfflineLexical is the first offline judge, kept to be compared with
// the default on the same labels (VOICEAI_JUDGE_PROVIDER=offline-lexical):
// it judges by shared words, not meaning. A reply passes a condition
// when it contains at least half the condition's content words (stemmed)
// and every number it states, exactly. It plays the agent as Offline.
type Lexical struct{ Model }

// ModelName is "offline-v1".
func (Lexical) ModelName() string { return "offline-v1" }

// Judge decides by comparing with examples, or by the conditions' words.
// In a simulation (in.Simulation) it judges what the agent said in all
// of its turns of the conversation taken together, not only its last:
// a simulation meets a condition when the agent said it at some point
// (and it is a refusal only when every answer the agent gave the user
// was one).
func (Lexical) Judge(_ context.Context, in model.JudgeInput) (model.Verdict, model.Usage, error) {
	reply, refused, where := said(in)
	if refused && !asksForRefusal(in) {
		return notCovered(in), model.Usage{Calls: 1}, nil
	}
	rt := stemSet(reply)
	similar := func(example string) float64 { return domain.Jaccard(stemSet(example), rt) }
	v, decided := byExamples(in, similar, "word-set similarity", "closer to", where)
	switch {
	case decided:
	case len(in.Conditions) > 0:
		if greets(reply) {
			rt["greet"] = true // "greets the caller" is met by a hello
		}
		v.Result = domain.ConditionSuccess
		v.Summary = "Offline judge: " + where + " contains at least half the content words of every success condition, and every number they state."
		for _, c := range in.Conditions {
			msg, fail, unchecked := judgeCondition(c, rt, refused, where)
			v.Messages = append(v.Messages, msg)
			switch {
			case fail != "" && v.Result != domain.ConditionFailure:
				v.Result, v.Summary = domain.ConditionFailure, fail
			case unchecked && v.Result == domain.ConditionSuccess:
				v.Result, v.Summary = domain.ConditionUnknown, uncheckable(c)
			}
		}
	case v.Summary == "":
		v.Summary = "Offline judge: no examples or condition to decide by."
	}
	return v, model.Usage{Calls: 1}, nil
}

// judgeCondition is the rationale message for one success condition, the
// verdict's summary when the reply does not meet it, and whether the
// condition has no content words to check.
func judgeCondition(c string, reply map[string]bool, refused bool, where string) (msg, fail string, unchecked bool) {
	if refused && refusalWords(c) {
		return fmt.Sprintf("Condition %q: it asks the agent to decline, and the agent said it cannot find the question in its instructions.", c), "", false
	}
	var found, missing, numbers []string
	for _, t := range contentTerms(c, conditionStopwords) {
		switch {
		case reply[t.stem]:
			found = append(found, t.word)
		case t.number:
			numbers = append(numbers, t.word)
			missing = append(missing, t.word)
		default:
			missing = append(missing, t.word)
		}
	}
	total := len(found) + len(missing)
	if total == 0 {
		// Any reply would contain all of nothing: it cannot be checked.
		return fmt.Sprintf("Condition %q: unknown: no content words to look for, so the offline judge cannot check it.", c), "", true
	}
	msg = fmt.Sprintf("Condition %q: %d of %d content words in %s (found: %s; missing: %s).", c, len(found), total, where, list(found), list(missing))
	the, are := "number", "is"
	if len(numbers) > 1 {
		the, are = "numbers", "are"
	}
	if len(numbers) > 0 {
		msg += fmt.Sprintf(" The %s %s it states %s not in %s; numbers must match exactly.", the, strings.Join(numbers, ", "), are, where)
	}
	switch {
	case len(found)*2 < total:
		fail = fmt.Sprintf("Offline judge: %s lacks most content words of a success condition (%q): missing %s.", where, c, list(missing))
	case len(numbers) > 0:
		fail = fmt.Sprintf("Offline judge: %s lacks the %s %s that a success condition states (%q); numbers must match exactly.", where, the, strings.Join(numbers, ", "), c)
	}
	return msg, fail, false
}
