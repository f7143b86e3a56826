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
// loneExampleSimilarity is how alike a reply must be to an example to be
// judged by it when the test gives examples of one kind only.
const loneExampleSimilarity = 0.5

func (Lexical) Judge(_ context.Context, in model.JudgeInput) (model.Verdict, model.Usage, error) {
	reply, refused, where := in.Reply.Said(), isRefusal(in.Reply), "the reply"
	if in.Simulation {
		reply, refused = agentSaid(in.Transcript)
		where = "what the agent said"
	}
	if refused && !asksForRefusal(in) {
		return notCovered(in), model.Usage{Calls: 1}, nil
	}
	rt := stemSet(reply)
	bestS, iS := bestMatch(in.SuccessExamples, rt)
	bestF, iF := bestMatch(in.FailureExamples, rt)
	v := model.Verdict{Result: domain.ConditionUnknown}
	if iS >= 0 {
		v.Messages = append(v.Messages, fmt.Sprintf("Closest success example #%d, word-set similarity %.2f.", iS+1, bestS))
	}
	if iF >= 0 {
		v.Messages = append(v.Messages, fmt.Sprintf("Closest failure example #%d, word-set similarity %.2f.", iF+1, bestF))
	}
	// Examples of one kind only decide when the reply truly resembles one:
	// a word shared with a lone failure example is no failure.
	oneSided := (iS >= 0) != (iF >= 0)
	switch {
	case (iS >= 0 || iF >= 0) && bestS != bestF && (!oneSided || max(bestS, bestF) >= loneExampleSimilarity):
		if bestS > bestF {
			v.Result = domain.ConditionSuccess
			v.Summary = fmt.Sprintf("Offline judge: %s is closer to success example #%d (%.2f) than to any failure example (%.2f).", where, iS+1, bestS, bestF)
		} else {
			v.Result = domain.ConditionFailure
			v.Summary = fmt.Sprintf("Offline judge: %s is closer to failure example #%d (%.2f) than to any success example (%.2f).", where, iF+1, bestF, bestS)
		}
	case len(in.Conditions) > 0:
		if greets(reply) {
			rt["greet"] = true // "greets the caller" is met by a hello
		}
		v.Result = domain.ConditionSuccess
		v.Summary = "Offline judge: " + where + " contains at least half the content words of every success condition, and every number they state."
		for _, c := range in.Conditions {
			msg, fail := judgeCondition(c, rt, refused, where)
			v.Messages = append(v.Messages, msg)
			if fail != "" && v.Result == domain.ConditionSuccess {
				v.Result, v.Summary = domain.ConditionFailure, fail
			}
		}
	default:
		v.Summary = "Offline judge: no examples or condition to decide by."
	}
	return v, model.Usage{Calls: 1}, nil
}

// judgeCondition is the rationale message for one success condition, and
// the verdict's summary when the reply does not meet it.
func judgeCondition(c string, reply map[string]bool, refused bool, where string) (msg, fail string) {
	if refused && refusalWords(c) {
		return fmt.Sprintf("Condition %q: it asks the agent to decline, and the agent said it cannot find the question in its instructions.", c), ""
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
		return fmt.Sprintf("Condition %q: no content words to look for; nothing contradicts it.", c), ""
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
	return msg, fail
}
