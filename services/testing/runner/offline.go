package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Offline is the network-free model, the default: deterministic, so the
// same test on the same agent always gives the same, explainable result.
//
// As the agent it calls the tool whose name and description share the
// most words with the user's last message (arguments taken from that
// message), or else answers
// with the sentence of its system prompt (after variable substitution)
// sharing the most words with that message, or its first message.
//
// As the judge it compares the reply with the test's examples (word-set
// similarity): closer to a success example than to every failure example
// passes, and the reverse fails; without examples, the reply must contain
// at least half the content words of each success condition.
type Offline struct{}

// Provider is "offline".
func (Offline) Provider() string { return "offline" }

// ModelName is "offline-v1".
func (Offline) ModelName() string { return "offline-v1" }

var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if then so to of in on at by for with from as is are was were be been
	being it its this that these those i you he she we they me my your our their them do does did done not no yes can could
	should would will shall may might must has have had what which who whom when where why how all any each more most other
	some such only own same than too very just about into over after before again further once here there up down out off
	agent user response reply replies respond responds answer answers says say said message true false should must`) {
		stopwords[w] = true
	}
}

// contentWords is the words of s that are not stopwords, each once, in no
// particular order (callers only count them).
func contentWords(s string) []string {
	var out []string
	for w := range domain.Tokens(s) { // a set: every word once
		if !stopwords[w] {
			out = append(out, w)
		}
	}
	return out
}

func overlap(a []string, b map[string]bool) int {
	n := 0
	for _, w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// Respond plays the agent's next turn.
func (Offline) Respond(_ context.Context, c Conversation) (Turn, Usage, error) {
	last := ""
	for i := len(c.Turns) - 1; i >= 0; i-- {
		if c.Turns[i].Role == "user" {
			last = c.Turns[i].Text
			break
		}
	}
	asked := domain.Tokens(last)
	best, bestScore := -1, 0
	for i, t := range c.Tools {
		words := contentWords(strings.ReplaceAll(t.Name, "_", " ") + " " + t.Description)
		if s := overlap(words, asked); s > bestScore {
			best, bestScore = i, s
		}
	}
	usage := Usage{PromptTokens: int64(len(strings.Fields(c.SystemPrompt)) + len(strings.Fields(last))), Calls: 1}
	if best >= 0 {
		t := c.Tools[best]
		args := offlineArguments(t.Parameters, last)
		usage.CompletionTokens = int64(len(args) / 4)
		usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
		return Turn{Role: "agent", Calls: []Call{{ID: "call_" + t.Name, Name: t.Name, Arguments: args}}}, usage, nil
	}
	reply := ""
	if last != "" {
		bestSentence, bestScore := "", 0
		for _, s := range promptSentences(c.SystemPrompt) {
			if sc := overlap(s.words, asked); sc > bestScore {
				bestSentence, bestScore = s.text, sc
			}
		}
		reply = bestSentence
	}
	if reply == "" {
		reply = firstAgentLine(c)
	}
	if reply == "" {
		reply = "I'm sorry, I can't help with that."
	}
	usage.CompletionTokens = int64(len(strings.Fields(reply)))
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	return Turn{Role: "agent", Text: reply}, usage, nil
}

func firstAgentLine(c Conversation) string {
	for _, t := range c.Turns {
		if t.Role == "agent" && t.Text != "" {
			return t.Text
		}
	}
	return ""
}

var sentenceEnd = regexp.MustCompile(`[.!?\n]+`)

// sentence is a sentence of a system prompt and its content words.
type sentence struct {
	text  string
	words []string
}

// prompts caches the split system prompts: every run of an invocation
// shares its agent's prompt.
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
	var ss []sentence
	for _, s := range sentences(prompt) {
		ss = append(ss, sentence{text: s, words: contentWords(s)})
	}
	prompts.byText[prompt] = ss
	return ss
}

func sentences(s string) []string {
	var out []string
	for _, p := range sentenceEnd.Split(s, -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p+".")
		}
	}
	return out
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

// Judge decides by comparing with examples, or by the condition's words.
func (Offline) Judge(_ context.Context, in JudgeInput) (Verdict, Usage, error) {
	reply := replyText(in.Reply)
	rt := domain.Tokens(reply)
	bestS, iS := bestMatch(in.SuccessExamples, rt)
	bestF, iF := bestMatch(in.FailureExamples, rt)
	v := Verdict{Result: domain.ConditionUnknown}
	if iS >= 0 {
		v.Messages = append(v.Messages, fmt.Sprintf("Closest success example #%d, word-set similarity %.2f.", iS+1, bestS))
	}
	if iF >= 0 {
		v.Messages = append(v.Messages, fmt.Sprintf("Closest failure example #%d, word-set similarity %.2f.", iF+1, bestF))
	}
	switch {
	case (iS >= 0 || iF >= 0) && bestS != bestF:
		if bestS > bestF {
			v.Result = domain.ConditionSuccess
			v.Summary = fmt.Sprintf("Offline judge: the reply is closer to success example #%d (%.2f) than to any failure example (%.2f).", iS+1, bestS, bestF)
		} else {
			v.Result = domain.ConditionFailure
			v.Summary = fmt.Sprintf("Offline judge: the reply is closer to failure example #%d (%.2f) than to any success example (%.2f).", iF+1, bestF, bestS)
		}
	case len(in.Conditions) > 0:
		ok := true
		for _, c := range in.Conditions {
			words := contentWords(c)
			hit := overlap(words, rt)
			v.Messages = append(v.Messages, fmt.Sprintf("Condition %q: %d of %d content words in the reply.", c, hit, len(words)))
			if len(words) > 0 && hit*2 < len(words) {
				ok = false
			}
		}
		if ok {
			v.Result = domain.ConditionSuccess
			v.Summary = "Offline judge: the reply contains at least half the content words of every success condition."
		} else {
			v.Result = domain.ConditionFailure
			v.Summary = "Offline judge: the reply lacks most content words of a success condition."
		}
	default:
		v.Summary = "Offline judge: no examples or condition to decide by."
	}
	return v, Usage{Calls: 1}, nil
}

func replyText(t Turn) string {
	var b strings.Builder
	b.WriteString(t.Text)
	for _, c := range t.Calls {
		b.WriteString(" ")
		b.WriteString(c.Name)
		b.WriteString(" ")
		b.WriteString(c.Arguments)
	}
	return b.String()
}

func bestMatch(examples []string, reply map[string]bool) (float64, int) {
	best, at := -1.0, -1
	for i, e := range examples {
		if s := domain.Jaccard(domain.Tokens(e), reply); s > best {
			best, at = s, i
		}
	}
	if at < 0 {
		return 0, -1
	}
	return best, at
}
