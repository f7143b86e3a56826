package offline

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/services/testing/model"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/meaning"
)

// Offline is the network-free model, the default: deterministic (no
// randomness, no clock, no map order in its output), so the same test on
// the same agent always gives the same, explainable result. It answers
// from the agent's own configuration by retrieval and judges by word
// coverage; it understands no meaning beyond shared words.
//
// Words are matched case-folded and stemmed (refunds, refunded → refund;
// policies → policy; cancelled, cancellation → cancel), number words up
// to twenty and the tens read as digits (thirty → 30), and function words
// and words about the conversation ("the agent explains …") are ignored;
// see offline_text.go.
//
// As the agent, for the user's last message it
//   - calls the tool whose name and description share the most words with
//     the message, when no sentence of its configuration shares more
//     (arguments taken from the message: the first number for a numeric
//     property, else the word after the property's name, else the whole
//     message);
//   - else answers with the sentences of its system prompt (after variable
//     substitution) or first message that share the most words with it,
//     and those that add words the first ones lack, at most three, in
//     their order in the prompt. The prompt is split into sentences at
//     . ! ? and at line ends; bullets are dropped, a "# heading" or a
//     "Refund policy:" lead-in lends its words to the lines under it, and
//     a question in the prompt (an FAQ's "Q: Do you deliver?") lends its
//     words to the answer after it;
//   - answers a greeting, or a message without a content word, with its
//     first message;
//   - and when nothing in its configuration shares a content word with
//     the message, says plainly that it cannot find that in its
//     instructions (offlineRefusal).
//
// As the judge, with success or failure examples, the reply passes when
// it is closer (word-set similarity of the normalised words) to a success
// example than to every failure example and fails in the reverse case. A
// tie, or no examples (or examples of one kind only, none at least half
// alike), is decided by the success conditions: each is met
// when the reply contains at least half of the condition's content words
// and every number the condition states, exactly ("60 days" does not meet
// "30 days"); the rationale names the words found and missing. A refusal
// (the agent's configuration did not cover the question) fails, saying
// so, unless a condition or success example asks for a refusal ("declines
// …", "cannot help"), which the refusal then meets.
//
// It cannot judge meaning: synonyms and paraphrases do not match (a
// "reimbursement" is not a "refund"), negation is not understood (a reply
// that says "no refunds" contains "refunds"), nor are tone, politeness,
// language, facts that are not in the reply's words, or numbers written
// differently (9:00 and nine, two hundred and 200); a reply that shares
// half of a condition's words meets it whatever else it says. The judge
// does not see the agent's configuration: it knows a question was not
// covered only from the offline agent's refusal. As the agent it quotes
// its instructions rather than following them, and it never asks back.
//
// In a simulation test it also plays the user, from the scenario's goal
// and ask sentences (offline_user.go); after a tool call it says the
// results as they came; and its judge checks each condition against all
// of the agent's turns of the conversation (see Judge).
type Model struct{}

// Provider is "offline".
func (Model) Provider() string { return "offline" }

// ModelName is "offline-v2": the judge that reads meaning (offline-v1,
// OfflineLexical, read shared words).
func (Model) ModelName() string { return "offline-v2" }

// Deterministic: the same question always gets the same answer, so one
// judge vote is enough and nothing is worth caching.
func (Model) Deterministic() bool { return true }

// offlineRefusal is the agent's answer to a message nothing in its
// configuration covers; the judge recognises it.
const Refusal = "I'm sorry, I can't find anything about that in my instructions."

// offlineHello greets for an agent without a first message.
const offlineHello = "Hello! How can I help you?"

// maxAnswerSentences bounds an answer.
const maxAnswerSentences = 3

// Respond plays the agent's next turn.
func (Model) Respond(_ context.Context, c model.Conversation) (model.Turn, model.Usage, error) {
	last := lastUserText(c.Turns)
	usage := model.Usage{PromptTokens: int64(len(strings.Fields(c.SystemPrompt)) + len(strings.Fields(last))), Calls: 1}
	turn, err := offlineAnswer(c, last)
	if err != nil {
		return model.Turn{}, model.Usage{}, err
	}
	if len(turn.Calls) > 0 {
		usage.CompletionTokens = int64(len(turn.Calls[0].Arguments) / 4)
	} else {
		usage.CompletionTokens = int64(len(strings.Fields(turn.Text)))
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	return turn, usage, nil
}

// answers memoises the offline agent's answers: it is deterministic, and
// an invocation asks the same agent the same question once per repeat.
// Bounded: a key is a digest, a turn a few sentences.
var answers, _ = lru.New[[sha256.Size]byte, model.Turn](8192)

// ResetCaches forgets the memoised answers and the split prompts, so that
// the next run works everything out again (a test compares such a run
// with one answered from memory).
func ResetCaches() {
	answers.Purge()
	prompts.Lock()
	prompts.byText = nil
	prompts.Unlock()
}

func offlineAnswer(c model.Conversation, last string) (model.Turn, error) {
	if n := len(c.Turns); n > 0 && c.Turns[n-1].Role == "tool" {
		return toolAnswer(c.Turns), nil
	}
	key := answerKey(c, last)
	if t, ok := answers.Get(key); ok {
		return t, nil
	}
	t, err := answerByMeaning(c, last)
	if err == nil {
		answers.Add(key, t)
	}
	return t, err
}

// answerKey digests what the offline agent's answer depends on: its
// prompt, first message and tools, and the user's last message.
func answerKey(c model.Conversation, last string) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range []string{c.SystemPrompt, firstAgentLine(c), last} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, t := range c.Tools {
		h.Write([]byte(t.Name + "\x00" + t.Description + "\x00"))
		h.Write(t.Parameters)
		h.Write([]byte{0})
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func answerByMeaning(c model.Conversation, last string) (model.Turn, error) {
	first := firstAgentLine(c)
	if isGreeting(contentTerms(last, nil)) {
		if first == "" {
			first = offlineHello
		}
		return model.Turn{Role: "agent", Text: first}, nil
	}
	m, err := meaning.Default()
	if err != nil {
		return model.Turn{}, err
	}
	cands := promptSentences(c.SystemPrompt)
	if first != "" {
		cands = append(cands[:len(cands):len(cands)], promptSentences(first)...)
	}
	texts := make([]string, len(cands))
	for i, s := range cands {
		texts[i] = s.match
	}
	_, hits := m.Cover(last, texts)
	best := 0
	for _, h := range hits {
		best = max(best, count(h))
	}
	tool, toolScore := -1, 0
	if len(c.Tools) > 0 {
		descs := make([]string, len(c.Tools))
		for i, t := range c.Tools {
			descs[i] = strings.ReplaceAll(t.Name, "_", " ") + ". " + t.Description
		}
		_, th := m.Cover(last, descs)
		for i, h := range th {
			if n := count(h); n > toolScore {
				tool, toolScore = i, n
			}
		}
	}
	if tool >= 0 && toolScore >= best {
		t := c.Tools[tool]
		return model.Turn{Role: "agent", Calls: []model.Call{{ID: "call_" + t.Name, Name: t.Name, Arguments: offlineArguments(t.Parameters, last)}}}, nil
	}
	if best == 0 {
		return model.Turn{Role: "agent", Text: Refusal}, nil
	}
	return model.Turn{Role: "agent", Text: strings.Join(pick(cands, hits, best), " ")}, nil
}

// offlineToolFailed prefixes the offline agent's report of a failed tool
// call.
const offlineToolFailed = "I'm sorry, that did not work: "

// toolAnswer reports the results of the agent's last tool calls (the
// tool turns that end the conversation): each result as it came, an
// error after offlineToolFailed.
func toolAnswer(turns []model.Turn) model.Turn {
	i := len(turns)
	for i > 0 && turns[i-1].Role == "tool" {
		i--
	}
	var parts []string
	for _, t := range turns[i:] {
		text := strings.TrimSpace(t.Text)
		if t.IsError {
			text = offlineToolFailed + text
		}
		if text != "" {
			parts = append(parts, text)
		}
	}
	return model.Turn{Role: "agent", Text: strings.Join(parts, " ")}
}

// pick is the texts of the candidates that match the most asked words,
// then of those that add the most words not yet matched, at most
// maxAnswerSentences, in their order in the configuration.
func pick(cands []sentence, hits [][]bool, best int) []string {
	chosen := make([]bool, len(cands))
	covered := make([]bool, len(hits[0]))
	n := 0
	take := func(i int) {
		chosen[i] = true
		n++
		for j, h := range hits[i] {
			covered[j] = covered[j] || h
		}
	}
	for i := range cands {
		if n < maxAnswerSentences && count(hits[i]) == best {
			take(i)
		}
	}
	for n < maxAnswerSentences {
		at, gain := -1, 0
		for i := range cands {
			g := 0
			for j, h := range hits[i] {
				if h && !covered[j] {
					g++
				}
			}
			if !chosen[i] && g > gain {
				at, gain = i, g
			}
		}
		if at < 0 {
			break
		}
		take(at)
	}
	var out []string
	for i, s := range cands {
		if chosen[i] {
			out = append(out, s.text)
		}
	}
	return out
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// isGreeting reports whether a message asks nothing: it has no content
// word, or only greeting words ("Good morning!").
func isGreeting(asked []term) bool {
	for _, t := range asked {
		if !greetingWords[t.word] {
			return false
		}
	}
	return true
}

func lastUserText(turns []model.Turn) string {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role == "user" {
			return turns[i].Text
		}
	}
	return ""
}

func firstAgentLine(c model.Conversation) string {
	for _, t := range c.Turns {
		if t.Role == "agent" && t.Text != "" {
			return t.Text
		}
	}
	return ""
}

// prompts caches the split system prompts and first messages: every run
// of an invocation shares its agent's. A cached slice is never appended
// to in place.
var prompts struct {
	sync.Mutex
	byText map[string][]sentence
}

func promptSentences(prompt string) []sentence {
	prompts.Lock()
	defer prompts.Unlock()
	if ss, ok := prompts.byText[prompt]; ok {
		return ss
	}
	if prompts.byText == nil || len(prompts.byText) >= 64 {
		prompts.byText = map[string][]sentence{}
	}
	ss := knowledge(prompt)
	prompts.byText[prompt] = ss
	return ss
}

var number = regexp.MustCompile(`-?\d+(\.\d+)?`)

// offlineArguments fills each schema property from the user's message:
// the first number for a numeric property, else the word after the
// property's name ("date friday", "city: Paris"), else the whole message.
func offlineArguments(schema json.RawMessage, msg string) string {
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	args := map[string]any{}
	lower := lowerSameWidth(msg) // byte offsets in lower are offsets in msg
	for name, p := range s.Properties {
		key := lowerSameWidth(strings.ReplaceAll(name, "_", " "))
		switch {
		case p.Type == "number" || p.Type == "integer":
			if n := number.FindString(msg); n != "" {
				var v float64
				_, _ = fmt.Sscan(n, &v)
				args[name] = v
			}
		case strings.Contains(lower, key+" "):
			rest := strings.TrimSpace(msg[strings.Index(lower, key+" ")+len(key):])
			rest = strings.TrimLeft(rest, ":= ")
			if f := strings.Fields(rest); len(f) > 0 {
				args[name] = strings.Trim(f[0], ".,;!?\"'")
			}
		default:
			args[name] = msg
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}

// lowerSameWidth lower-cases s rune by rune, keeping every rune whose
// lower case has another UTF-8 length (and every invalid byte) as it is,
// so that an index into the result is the same index into s.
// strings.ToLower does not keep lengths (Ⱥ, 2 bytes, becomes ⱥ, 3 bytes;
// an invalid byte becomes U+FFFD, 3 bytes).
func lowerSameWidth(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if l := unicode.ToLower(r); r != utf8.RuneError && utf8.RuneLen(l) == n {
			b.WriteRune(l)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Judge decides by comparing with examples, or by the conditions'
// meaning (package meaning: synonyms and derived forms from WordNet,
// negation, amounts in any unit, conditions of several parts). In a
// simulation (in.Simulation) it judges what the agent said in all of its
// turns of the conversation taken together, not only its last: a
// simulation meets a condition when the agent said it at some point (and
// it is a refusal only when every answer the agent gave the user was
// one).
//
// Each success condition is decided first (meaning.Decide): the verdict
// fails when one is not met and passes when all are met, whatever the
// examples say (a reply that contradicts the condition does not pass for
// sharing words with a success example). The examples decide what the
// conditions leave open (none fails and one cannot be decided), and a test
// without conditions: with examples of both kinds, the reply passes when
// it is closer in meaning (meaning.Similarity) to a success example than
// to every failure example, and fails in the reverse case; with examples
// of one kind only, they decide when the reply is at least half alike.
// Else the verdict is unknown, saying what was found and missed.
func (Model) Judge(_ context.Context, in model.JudgeInput) (model.Verdict, model.Usage, error) {
	m, err := meaning.Default()
	if err != nil {
		return model.Verdict{}, model.Usage{}, err
	}
	reply, refused, where := said(in)
	if refused && !asksForRefusal(in) {
		return notCovered(in), model.Usage{Calls: 1}, nil
	}
	similar := func(example string) float64 { return m.Similarity(example, reply) }
	examples, decided := byExamples(in, similar, "similarity in meaning", "closer in meaning to", where)
	v := examples
	if len(in.Conditions) > 0 {
		v = model.Verdict{}
		var failed, unknown string
		for _, c := range in.Conditions {
			d := m.Decide(c, reply)
			v.Messages = append(v.Messages, fmt.Sprintf("Condition %q: %s: %s.", c, strings.ReplaceAll(string(d.Result), "_", " "), d.Reason))
			switch {
			case d.Result == meaning.NotMet && failed == "":
				failed = fmt.Sprintf("Offline judge: %s does not meet the success condition %q: %s.", where, c, d.Reason)
			case d.Uncheckable && unknown == "":
				unknown = uncheckable(c)
			case d.Result == meaning.Unknown && unknown == "":
				unknown = fmt.Sprintf("Offline judge: cannot decide whether %s meets the success condition %q: %s.", where, c, d.Reason)
			}
		}
		switch {
		case failed != "":
			v.Result, v.Summary = domain.ConditionFailure, failed
		case unknown != "" && decided: // what the conditions leave open, the examples decide
			v.Result, v.Summary = examples.Result, examples.Summary+" The success conditions did not decide it."
		case unknown != "":
			v.Result, v.Summary = domain.ConditionUnknown, unknown
		default:
			v.Result, v.Summary = domain.ConditionSuccess, fmt.Sprintf("Offline judge: %s meets every success condition.", where)
		}
		v.Messages = append(v.Messages, examples.Messages...)
	}
	if v.Summary == "" {
		v.Summary = "Offline judge: no examples or condition to decide by."
	}
	return v, model.Usage{Calls: 1}, nil
}

// undecided is the summary of examples that did not decide a test with
// no condition: what the reply was compared with, and why that was not
// enough (a tie, or too little alike to the examples of the only kind).
func undecided(where, measure string, bestS float64, iS int, bestF float64, iF int) string {
	const none = ", and the test has no success condition to decide by."
	switch {
	case iS >= 0 && iF >= 0 && bestS == 0:
		return fmt.Sprintf("Offline judge: %s is like none of the examples (%s 0.00 to each): they do not decide it%s", where, measure, none)
	case iS >= 0 && iF >= 0:
		return fmt.Sprintf("Offline judge: %s is as close to success example #%d as to failure example #%d (%s %.2f): the examples do not decide it%s",
			where, iS+1, iF+1, measure, bestS, none)
	case iS >= 0:
		return fmt.Sprintf("Offline judge: %s is not alike enough to any success example to be judged by them (closest #%d, %s %.2f; %.2f decides)%s",
			where, iS+1, measure, bestS, loneExampleSimilarity, none)
	default:
		return fmt.Sprintf("Offline judge: %s is not alike enough to any failure example to be judged by them (closest #%d, %s %.2f; %.2f decides)%s",
			where, iF+1, measure, bestF, loneExampleSimilarity, none)
	}
}

// uncheckable is the summary of a condition that names nothing a reply
// could say or lack ("The agent answers correctly"): an offline judge
// cannot check it, and says what the test's author can do instead.
func uncheckable(c string) string {
	return fmt.Sprintf("Offline judge: cannot check the success condition %q: it names nothing a reply could say or lack, so any reply would meet it. "+
		"Write what the reply must say (for example \"The agent says refunds are possible within 30 days\"), add success examples, "+
		"or judge with a model (VOICEAI_JUDGE_PROVIDER=openai).", c)
}

func list(words []string) string {
	if len(words) == 0 {
		return "none"
	}
	return strings.Join(words, ", ")
}

// agentSaid is what the agent said and did in a conversation: the text
// of every agent turn and each of its tool calls (name and arguments)
// whose result was not an error; and whether every answer the agent gave
// the user (its turns after the first user message) was a refusal.
func agentSaid(turns []model.Turn) (string, bool) {
	var b strings.Builder
	answers, refusals, asked := 0, 0, false
	for i, t := range turns {
		switch t.Role {
		case "user":
			asked = true
		case "agent":
			b.WriteString(t.Text)
			b.WriteString(" ")
		calls:
			for _, c := range t.Calls {
				for _, r := range turns[i+1:] {
					if r.Role != "tool" {
						break
					}
					if r.ToolCallID == c.ID && r.IsError {
						continue calls
					}
				}
				b.WriteString(c.Name + " " + c.Arguments + " ")
			}
			if asked && t.Text != "" {
				answers++
				if isRefusal(t) {
					refusals++
				}
			}
		}
	}
	return b.String(), answers > 0 && refusals == answers
}

// isRefusal reports whether the reply is the offline agent's answer to a
// question its configuration does not cover.
func isRefusal(t model.Turn) bool { return len(t.Calls) == 0 && t.Text == Refusal }

// asksForRefusal reports whether a success condition or example expects
// the agent to decline.
func asksForRefusal(in model.JudgeInput) bool {
	for _, s := range append(in.Conditions[:len(in.Conditions):len(in.Conditions)], in.SuccessExamples...) {
		if refusalWords(s) {
			return true
		}
	}
	return false
}

// refusalWords reports whether s speaks of declining: declines, refuses,
// unable, cannot, can't, out of scope, apologises, or a negation before
// know, sure, help, find, answer or assist ("I do not know", "no idea").
func refusalWords(s string) bool {
	words := splitWords(s)
	for i, w := range words {
		for _, p := range []string{"declin", "refus", "unable", "cannot", "cant", "scope", "apolog"} {
			if strings.HasPrefix(w, p) {
				return true
			}
		}
		switch w {
		case "not", "dont", "doesnt", "didnt", "no", "never":
			for _, n := range words[i+1 : min(i+3, len(words))] {
				switch n {
				case "know", "sure", "help", "find", "answer", "assist", "idea":
					return true
				}
			}
		}
	}
	return false
}

// greets reports whether a reply contains a greeting.
func greets(reply string) bool {
	for _, w := range splitWords(reply) {
		switch w {
		case "hi", "hello", "hey", "hiya", "howdy", "greetings", "welcome", "morning", "afternoon", "evening":
			return true
		}
	}
	return false
}

// notCovered fails a reply that is the agent's refusal: nothing in its
// configuration matched the question.
func notCovered(in model.JudgeInput) model.Verdict {
	q := lastUserText(in.Transcript)
	if in.Simulation { // the user's last message closes the conversation: name the first
		for _, t := range in.Transcript {
			if t.Role == "user" {
				q = t.Text
				break
			}
		}
	}
	var words []string
	for _, t := range contentTerms(q, nil) {
		words = append(words, t.word)
	}
	v := model.Verdict{Result: domain.ConditionFailure, Messages: []string{fmt.Sprintf(
		"The reply is the offline agent's refusal: no sentence of the agent's system prompt or first message and no tool shares a content word with the question (looked for: %s).", list(words))}}
	for _, c := range in.Conditions {
		v.Messages = append(v.Messages, fmt.Sprintf("Condition %q: not met, the agent did not answer.", c))
	}
	question := "the question"
	if q != "" {
		question = fmt.Sprintf("the question %q", q)
	}
	v.Summary = fmt.Sprintf("Offline judge: the agent's configuration does not cover %s: nothing in its system prompt, first message or tools matches it, so the agent answered that it cannot find it in its instructions.", question)
	return v
}

// said is what a judge reads of the reply: its text and calls, or in a
// simulation all the agent said; whether that was the offline agent's
// refusal; and how the verdict names it.
func said(in model.JudgeInput) (reply string, refused bool, where string) {
	if in.Simulation {
		reply, refused = agentSaid(in.Transcript)
		return reply, refused, "what the agent said"
	}
	return in.Reply.Said(), isRefusal(in.Reply), "the reply"
}

// loneExampleSimilarity is how alike a reply must be to an example to be
// judged by it when the test gives examples of one kind only.
const loneExampleSimilarity = 0.5

// byExamples judges by the test's examples, as both offline judges do,
// with their measure of likeness: the reply passes when it is closer to a
// success example than to every failure example, and fails in the
// reverse case; examples of one kind only decide when the reply truly
// resembles one (a word shared with a lone failure example is no
// failure). decided is false for a tie or no deciding example: the
// conditions decide, or, when there are none, the summary says why the
// examples did not. The verdict names the closest examples either way.
func byExamples(in model.JudgeInput, similar func(example string) float64, measure, closer, where string) (v model.Verdict, decided bool) {
	closest := func(examples []string) (float64, int) {
		best, at := -1.0, -1
		for i, e := range examples {
			if s := similar(e); s > best {
				best, at = s, i
			}
		}
		return max(best, 0), at
	}
	bestS, iS := closest(in.SuccessExamples)
	bestF, iF := closest(in.FailureExamples)
	v.Result = domain.ConditionUnknown
	if iS >= 0 {
		v.Messages = append(v.Messages, fmt.Sprintf("Closest success example #%d, %s %.2f.", iS+1, measure, bestS))
	}
	if iF >= 0 {
		v.Messages = append(v.Messages, fmt.Sprintf("Closest failure example #%d, %s %.2f.", iF+1, measure, bestF))
	}
	oneSided := (iS >= 0) != (iF >= 0)
	if iS < 0 && iF < 0 {
		return v, false
	}
	if bestS == bestF || (oneSided && max(bestS, bestF) < loneExampleSimilarity) {
		if len(in.Conditions) == 0 { // no condition decides: say what the examples did not
			v.Summary = undecided(where, measure, bestS, iS, bestF, iF)
		}
		return v, false
	}
	if bestS > bestF {
		v.Result = domain.ConditionSuccess
		v.Summary = fmt.Sprintf("Offline judge: %s is %s success example #%d (%.2f) than to any failure example (%.2f).", where, closer, iS+1, bestS, bestF)
	} else {
		v.Result = domain.ConditionFailure
		v.Summary = fmt.Sprintf("Offline judge: %s is %s failure example #%d (%.2f) than to any success example (%.2f).", where, closer, iF+1, bestF, bestS)
	}
	return v, true
}
