package meaning

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// quantity is an amount a text states, in a canonical unit: a duration
// in days (a month is 28 to 31 of them), money in its currency's major
// unit, a clock time in minutes after midnight (9:00 without am or pm is
// also 21:00), a percentage, a weekday or month by number, a count.
type quantity struct {
	dim      string    // duration, workdays, money:usd (money:any for "free"), per (the period a price is for, in days), percent, clock, weekday, month, always, anytime, frequency (times a day), count
	values   []float64 // the values it may mean (each ±tol)
	from, to int       // the words it spans
	surface  string
	sent     int  // the sentence it is in
	negated  bool // said under a negation ("not on Sundays", "except Sundays")
	asks     bool // said in a question
}

// tolerance is how far two durations may differ and still be the same
// ("4 weeks" and "a month", "30 days" and "a month"); other amounts
// must be equal.
const tolerance = 0.07

func (q quantity) String() string { return q.surface }

// same reports whether q and o are the same amount; comparable whether
// they measure the same thing at all (else neither supports nor
// contradicts the other).
func (q quantity) comparable(o quantity) bool {
	if q.dim == o.dim {
		return true
	}
	return strings.HasPrefix(q.dim, "money:") && strings.HasPrefix(o.dim, "money:") && (q.dim == "money:any" || o.dim == "money:any")
}

func (q quantity) same(o quantity) bool {
	if !q.comparable(o) {
		return false
	}
	tol := 0.0
	if q.dim == "duration" || q.dim == "workdays" || q.dim == "frequency" || q.dim == "per" {
		tol = tolerance
	}
	for _, a := range q.values {
		for _, b := range o.values {
			if a == b || math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))+1e-9 {
				return true
			}
		}
	}
	return false
}

var (
	digits    = regexp.MustCompile(`^\d+(?:[.,]\d+)*$`)
	clockRe   = regexp.MustCompile(`^(\d{1,2}):(\d{2})(am|pm)?$`)
	hourAmPm  = regexp.MustCompile(`^(\d{1,2})(am|pm)$`)
	ordinalRe = regexp.MustCompile(`^(\d+)(st|nd|rd|th)$`)
	smallNums = map[string]float64{
		"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
		"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
		"seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
		"sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12, "half": 0.5, "couple": 2,
	}
	scales    = map[string]float64{"hundred": 100, "thousand": 1000, "million": 1e6}
	durations = map[string][]float64{
		"second": {1.0 / 86400}, "seconds": {1.0 / 86400}, "sec": {1.0 / 86400}, "secs": {1.0 / 86400},
		"minute": {1.0 / 1440}, "minutes": {1.0 / 1440}, "min": {1.0 / 1440}, "mins": {1.0 / 1440},
		"hour": {1.0 / 24}, "hours": {1.0 / 24}, "hr": {1.0 / 24}, "hrs": {1.0 / 24},
		"day": {1}, "days": {1}, "night": {1}, "nights": {1}, "week": {7}, "weeks": {7}, "fortnight": {14}, "fortnights": {14},
		"month": {28, 29, 30, 31}, "months": {28, 29, 30, 31}, "year": {365, 366}, "years": {365, 366},
	}
	currencies = map[string]string{
		"$": "usd", "dollar": "usd", "dollars": "usd", "usd": "usd", "buck": "usd", "bucks": "usd",
		"£": "gbp", "pound": "gbp", "pounds": "gbp", "gbp": "gbp", "quid": "gbp",
		"€": "eur", "euro": "eur", "euros": "eur", "eur": "eur",
	}
	subunits         = map[string]string{"cent": "usd", "cents": "usd", "pence": "gbp", "penny": "gbp", "p": "gbp"}
	weekdays         = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
	months           = []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}
	timePrepositions = set("at", "from", "until", "till", "by", "before", "after", "around")
	feeNouns         = set("charge", "charges", "fee", "fees", "cost", "costs", "payment")
	alwaysSet        = [][]string{{"24/7"}, {"around", "the", "clock"}, {"round", "the", "clock"}, {"24", "hours", "a", "day"}, {"day", "and", "night"}, {"all", "day", "every", "day"}}
	// anytimeSet: whenever the caller chooses ("cancel at any time",
	// "stop whenever you want")
	anytimeSet = [][]string{{"at", "any", "time"}, {"any", "time"}, {"anytime"}, {"at", "any", "point"}, {"at", "any", "moment"},
		{"whenever", "you", "want"}, {"whenever", "you", "like"}, {"whenever", "you", "wish"}, {"whenever", "suits", "you"}, {"whenever", "you", "choose"}}
)

// quantities finds the amounts in words, left to right, each word in at
// most one.
func quantities(words []word) []quantity {
	var out []quantity
	add := func(dim string, from, to int, values ...float64) {
		surface := joinWords(words[from:to])
		if len(surface) > 2 && strings.ContainsAny(surface[:2], "$£€") {
			surface = strings.Replace(surface, " ", "", 1) // $4.99
		}
		out = append(out, quantity{dim: dim, values: values, from: from, to: to, surface: surface})
	}
	at := func(i int) string {
		if i >= 0 && i < len(words) {
			return words[i].s
		}
		return ""
	}
	// perAfter reads the period a price is per ("£60 a year", "€120 per
	// night", "$60 annually") at k: the word after it.
	perAfter := func(k int) int {
		switch {
		case (at(k) == "a" || at(k) == "an" || at(k) == "per" || at(k) == "each" || at(k) == "every") && durations[at(k+1)] != nil && !strings.HasSuffix(at(k+1), "s"):
			add("per", k, k+2, durations[at(k+1)]...)
			return k + 2
		case rateWords[at(k)] != "":
			add("per", k, k+1, durations[rateWords[at(k)]]...)
			return k + 1
		}
		return k
	}
	for i := 0; i < len(words); {
		w := words[i].s
		if n := matchSeq(words, i, alwaysSet); n > 0 {
			add("always", i, i+n, 1)
			i += n
			continue
		}
		if n := matchSeq(words, i, anytimeSet); n > 0 {
			add("anytime", i, i+n, 1)
			i += n
			continue
		}
		if m := clockRe.FindStringSubmatch(w); m != nil {
			h, _ := strconv.Atoi(m[1])
			mm, _ := strconv.Atoi(m[2])
			ap, n := m[3], 1
			if ap == "" && (at(i+1) == "am" || at(i+1) == "pm") {
				ap, n = at(i+1), 2
			}
			add("clock", i, i+n, clock(h, mm, ap)...)
			i += n
			continue
		}
		if m := hourAmPm.FindStringSubmatch(w); m != nil {
			h, _ := strconv.Atoi(m[1])
			add("clock", i, i+1, clock(h, 0, m[2])...)
			i++
			continue
		}
		switch w {
		case "noon", "midday":
			add("clock", i, i+1, 12*60)
			i++
			continue
		case "midnight":
			add("clock", i, i+1, 0)
			i++
			continue
		case "once", "twice", "thrice":
			if n, per := frequency(words, i+1); n > 0 {
				times := map[string]float64{"once": 1, "twice": 2, "thrice": 3}[w]
				add("frequency", i, i+1+n, perDay(times, per)...)
				i += 1 + n
				continue
			}
		case "every", "each":
			// every 12 months, every year: once in that time
			// (a bare "every day" says how often something is open, not a
			// period, and stays no amount)
			if v, n := number(words, i+1); n > 0 && durations[at(i+1+n)] != nil {
				d := durations[at(i+1+n)]
				add("frequency", i, i+2+n, perDay(1, scaled(d, v))...)
				i += 2 + n
				continue
			}
		case "half", "quarter":
			// half an hour, half a day, a quarter of an hour
			k := i + 1
			if at(k) == "of" {
				k++
			}
			if (at(k) == "a" || at(k) == "an") && durations[at(k+1)] != nil {
				part := 0.5
				if w == "quarter" {
					part = 0.25
				}
				from := i
				if at(i-1) == "a" {
					from = i - 1
				}
				add("duration", from, k+2, scaled(durations[at(k+1)], part)...)
				i = k + 2
				continue
			}
			// British "half seven" is 7:30
			if w == "half" {
				if h, n := number(words, i+1); n > 0 && h >= 1 && h <= 12 && h == math.Trunc(h) && !isUnit(at(i+1+n)) && at(i+1+n) != "of" {
					ap, extra := dayPart(words, i+1+n), 0
					if ap != "" {
						extra = 3
						if at(i+1+n) == "tonight" {
							extra = 1
						}
					}
					add("clock", i, i+1+n+extra, clock(int(h), 30, ap)...)
					i += 1 + n + extra
					continue
				}
			}
			if (at(i+1) == "past" || at(i+1) == "to") && i+2 < len(words) {
				if h, n := number(words, i+2); n > 0 && h >= 1 && h <= 12 {
					off := 30.0
					if w == "quarter" {
						off = 15
					}
					if at(i+1) == "to" {
						off, h = 60-off, h-1
					}
					add("clock", i, i+2+n, clock(int(h), int(off), "")...)
					i += 2 + n
					continue
				}
			}
		case "free":
			if at(i-1) != "feel" && at(i+1) != "to" && at(i+1) != "from" {
				n := 1
				if at(i+1) == "of" && feeNouns[at(i+2)] {
					n = 3
				}
				add("money:any", i, i+n, 0)
				i += n
				continue
			}
		case "no", "without":
			if feeNouns[at(i+1)] || (at(i+1) == "extra" && feeNouns[at(i+2)]) {
				n := 2
				if at(i+1) == "extra" {
					n = 3
				}
				add("money:any", i, i+n, 0)
				i += n
				continue
			}
		case "complimentary":
			add("money:any", i, i+1, 0)
			i++
			continue
		}
		if d := index(weekdays, strings.TrimSuffix(w, "s")); d >= 0 {
			add("weekday", i, i+1, float64(d))
			i++
			continue
		}
		if mo := index(months, w); mo >= 0 && (w != "may" && w != "march" || isNumberWord(at(i+1)) || isNumberWord(at(i-1))) {
			add("month", i, i+1, float64(mo))
			i++
			continue
		}
		if cur, ok := currencies[w]; ok && (w == "$" || w == "£" || w == "€") {
			if v, n := number(words, i+1); n > 0 {
				add("money:"+cur, i, i+1+n, v)
				i = perAfter(i + 1 + n)
				continue
			}
		}
		v, n := number(words, i)
		if n == 0 && (w == "a" || w == "an") && durations[at(i+1)] != nil {
			v, n = 1, 1 // a month, an hour
		}
		if n == 0 {
			i++
			continue
		}
		j := i + n
		unit := at(j)
		switch {
		case unit == "%" || unit == "percent" || (unit == "per" && at(j+1) == "cent"):
			end := j + 1
			if unit == "per" {
				end++
			}
			add("percent", i, end, v)
			i = end
		case currencies[unit] != "":
			add("money:"+currencies[unit], i, j+1, v)
			i = perAfter(j + 1)
		case subunits[unit] != "":
			add("money:"+subunits[unit], i, j+1, v/100)
			i = perAfter(j + 1)
		case (unit == "business" || unit == "working") && (at(j+1) == "day" || at(j+1) == "days"):
			add("workdays", i, j+2, v)
			i = j + 2
		case durations[unit] != nil:
			end := j + 1
			if at(end) == "and" && at(end+1) == "a" && at(end+2) == "half" {
				v, end = v+0.5, end+3 // an hour and a half
			}
			add("duration", i, end, scaled(durations[unit], v)...)
			i = end
		case (unit == "quarter" || unit == "quarters") && at(j+1) == "of" && (at(j+2) == "a" || at(j+2) == "an") && durations[at(j+3)] != nil:
			add("duration", i, j+4, scaled(durations[at(j+3)], v/4)...) // three quarters of an hour
			i = j + 4
		case unit == "times" || unit == "time":
			if n, per := frequency(words, j+1); n > 0 {
				add("frequency", i, j+1+n, perDay(v, per)...)
				i = j + 1 + n
				continue
			}
			add("count", i, j, v)
			i = j
		case unit == "o'clock" || unit == "am" || unit == "pm":
			ap := unit
			if unit == "o'clock" {
				ap = ""
			}
			add("clock", i, j+1, clock(int(v), 0, ap)...)
			i = j + 1
		case v >= 1 && v <= 12 && v == math.Trunc(v) && dayPart(words, j) != "":
			n := 3 // 7 in the evening, 8 in the morning
			if at(j) == "tonight" {
				n = 1
			}
			add("clock", i, j+n, clock(int(v), 0, dayPart(words, j))...)
			i = j + n
		case v >= 1 && v <= 24 && v == math.Trunc(v) && (unit == "to" || unit == "until" || unit == "till" || unit == "-") && isHourRange(words, j+1) && !isDateRange(words, j+1):
			// "nine to five", "9 until 17": a range of the clock
			end, n2 := number(words, j+1)
			add("clock", i, j, clock(int(v), 0, "")...)
			add("clock", j+1, j+1+n2, clock(int(end), 0, "")...)
			i = j + 1 + n2
		case v >= 1 && v <= 31 && v == math.Trunc(v) && (isDateRange(words, i) || (unit == "to" || unit == "until" || unit == "till" || unit == "-") && isDateRange(words, j+1)):
			add("count", i, j, v) // a day of a month: "by 10 August", "3 to 10 August"
			i = j
		case v >= 0 && v <= 24 && v == math.Trunc(v) && timePrepositions[at(i-1)]:
			add("clock", i, j, clock(int(v), 0, "")...) // "at 9", "until 5"
			i = j
		default:
			if n == 1 && (w == "one" || w == "half" || w == "couple" || w == "dozen") {
				i++ // "the one you bought", "half of them": not a count worth checking
				continue
			}
			add("count", i, j, v)
			i = j
		}
	}
	return out
}

func clock(h, m int, ap string) []float64 {
	switch {
	case ap == "am" && h == 12:
		return []float64{float64(m)}
	case ap == "am":
		return []float64{float64(h*60 + m)}
	case ap == "pm" && h < 12:
		return []float64{float64((h+12)*60 + m)}
	case ap == "pm", h > 12 || h == 0:
		return []float64{float64(h*60 + m)}
	}
	return []float64{float64(h*60 + m), float64((h+12)*60 + m)}
}

// number reads a number at words[i]: digits ("1,000", "2.5", "3rd") or
// words ("two hundred and fifty", "thirty five"); the words it took.
func number(words []word, i int) (float64, int) {
	if i >= len(words) {
		return 0, 0
	}
	w := words[i].s
	if m := ordinalRe.FindStringSubmatch(w); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		return v, 1
	}
	if digits.MatchString(w) {
		v, err := strconv.ParseFloat(strings.ReplaceAll(w, ",", ""), 64) // 1,000
		if err != nil {
			return 0, 0
		}
		n := 1
		if i+1 < len(words) && scales[words[i+1].s] > 0 {
			v *= scales[words[i+1].s]
			n++
		}
		if i+n+2 < len(words) && words[i+n].s == "and" && words[i+n+1].s == "a" && words[i+n+2].s == "half" {
			v, n = v+0.5, n+3 // 2 and a half
		}
		return v, n
	}
	// words: "two hundred and fifty", "thirty five", "a dozen"
	total, cur, n := 0.0, 0.0, 0
	for j := i; j < len(words); j++ {
		s := words[j].s
		if v, ok := smallNums[s]; ok {
			if (s == "half" || s == "dozen" || s == "couple") && n > 0 {
				break
			}
			cur += v
			n = j - i + 1
			if s == "half" || s == "dozen" || s == "couple" {
				break
			}
			continue
		}
		if sc, ok := scales[s]; ok && (n > 0 || (j > i && words[j-1].s == "a")) {
			if sc >= 1000 {
				total += max(cur, 1) * sc
				cur = 0
			} else {
				cur = max(cur, 1) * sc
			}
			n = j - i + 1
			continue
		}
		if s == "and" && n > 0 && j+2 < len(words) && words[j+1].s == "a" && words[j+2].s == "half" {
			cur += 0.5 // four and a half
			n = j + 3 - i
			if j+3 < len(words) && scales[words[j+3].s] > 0 {
				cur *= scales[words[j+3].s] // one and a half thousand
				n++
			}
			break
		}
		if s == "and" && n > 0 && j+1 < len(words) {
			if _, ok := smallNums[words[j+1].s]; ok {
				continue // two hundred and fifty
			}
		}
		if s == "a" && n == 0 && j+1 < len(words) && (scales[words[j+1].s] > 0 || words[j+1].s == "dozen" || words[j+1].s == "couple") {
			continue // a hundred, a dozen
		}
		break
	}
	if n == 0 {
		return 0, 0
	}
	return total + cur, n
}

func isNumberWord(s string) bool {
	if digits.MatchString(s) || ordinalRe.MatchString(s) {
		return true
	}
	_, ok := smallNums[s]
	return ok
}

func matchSeq(words []word, i int, seqs [][]string) int {
next:
	for _, seq := range seqs {
		if i+len(seq) > len(words) {
			continue
		}
		for k, s := range seq {
			if words[i+k].s != s {
				continue next
			}
		}
		return len(seq)
	}
	return 0
}

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// dayPart is "am" or "pm" when words[j:] say the part of the day ("in
// the morning", "in the evening", "at night", "tonight").
func dayPart(words []word, j int) string {
	at := func(i int) string {
		if i < len(words) {
			return words[i].s
		}
		return ""
	}
	switch {
	case at(j) == "tonight":
		return "pm"
	case at(j) == "in" && at(j+1) == "the" && at(j+2) == "morning":
		return "am"
	case at(j) == "in" && at(j+1) == "the" && (at(j+2) == "evening" || at(j+2) == "afternoon"), at(j) == "at" && at(j+1) == "night":
		return "pm"
	}
	return ""
}

// isHourRange reports whether words[j:] is the end of a range of hours:
// a whole number from 1 to 24 with no unit after it ("to five", not "to
// 5 days").
func isHourRange(words []word, j int) bool {
	v, n := number(words, j)
	if n == 0 || v < 1 || v > 24 || v != math.Trunc(v) {
		return false
	}
	if k := j + n; k < len(words) {
		next := words[k].s
		if durations[next] != nil || currencies[next] != "" || subunits[next] != "" || next == "%" || next == "percent" {
			return false
		}
	}
	return true
}

// scaled is each of a unit's values (in days) times v.
func scaled(unit []float64, v float64) []float64 {
	out := make([]float64, len(unit))
	for k, d := range unit {
		out[k] = v * d
	}
	return out
}

// frequency reads the period of "a year", "per month", "every week" at
// words[i:]: the words it took and the period in days.
func frequency(words []word, i int) (int, []float64) {
	if i+1 >= len(words) {
		return 0, nil
	}
	switch words[i].s {
	case "a", "an", "per", "every", "each":
		if d := durations[words[i+1].s]; d != nil {
			return 2, d
		}
	}
	return 0, nil
}

// perDay is times in each period, as times a day: "twice a year" and
// "every six months" are the same frequency.
func perDay(times float64, period []float64) []float64 {
	out := make([]float64, len(period))
	for k, d := range period {
		out[k] = times / d
	}
	return out
}

// isUnit reports whether s names a unit an amount is counted in.
func isUnit(s string) bool {
	return durations[s] != nil || currencies[s] != "" || subunits[s] != "" || s == "%" || s == "percent" || s == "times"
}

// isDateRange reports whether the number at words[j:] ends a range of
// days of a month ("3 to 10 August"), not of hours.
func isDateRange(words []word, j int) bool {
	_, n := number(words, j)
	k := j + n
	if k < len(words) && words[k].s == "of" {
		k++
	}
	return k < len(words) && index(months, words[k].s) >= 0
}
