package apperr

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The rules every JSON body follows at every edge, whatever its schema,
// so that what is stored can be read back by any reader (Go, JavaScript,
// the CLI) as it was accepted:
//
//   - a number fits a float64: 1e400 (or a 400-digit integer) is refused,
//     422 finite_number, rather than stored and served back as a value no
//     reader parses;
//   - an integer is integral whatever its spelling: 5.0, 5e0 and 50e-1 are
//     the integer 5, and are rewritten so (within ±2^53, where a float64
//     holds every integer exactly), so that a schema's integer and the
//     handler's int agree;
//   - a string is Unicode: a lone surrogate escape ("\ud800") or bytes that
//     are not UTF-8 are refused, 422 string_unicode. (encoding/json would
//     read either as U+FFFD, but a raw field kept as it came would store
//     and serve back the original.)
//
// Refusing is the choice for strings, rather than replacing with U+FFFD:
// a producer that sends half a character has a bug worth hearing about,
// and the event stays as its producer wrote it.

// maxExactInteger is the largest integer every float64 reader holds
// exactly (2^53).
const maxExactInteger = 1 << 53

// CheckJSONValues applies the rules above to body, valid JSON, and
// answers it with its numbers respelled where needed (body itself when
// none was), or the 422 naming every value that breaks a rule, at loc
// where (the first element: "body") and its path. Malformed JSON is
// answered unchanged, for the decoder to report.
func CheckJSONValues(body []byte, where string) ([]byte, error) {
	if !json.Valid(body) {
		return body, nil
	}
	w := walker{body: body, where: where}
	w.value()
	if len(w.errs) > 0 {
		return body, w.errs
	}
	if w.out == nil {
		return body, nil
	}
	return append(w.out, body[w.copied:]...), nil
}

// LocAt is the loc (where, then the path) of the value of body, valid
// JSON, that ends at byte offset end (as encoding/json's type errors
// report it), or nil when none does.
func LocAt(body []byte, end int64, where string) []any {
	if !json.Valid(body) {
		return nil
	}
	w := walker{body: body, where: where, at: end, find: true}
	w.value()
	return w.found
}

// walker reads valid JSON once, keeping the path of the value at hand.
// The path holds where each step is in the body; it becomes a loc only
// for a value refused or found, so a body that passes allocates nothing
// for it.
type walker struct {
	body   []byte
	i      int
	where  string // the loc's first element
	path   []step
	errs   ValidationErrors
	out    []byte // the respelled body so far, once a number is respelled
	copied int    // body[:copied] is in out
	// LocAt's search: the loc of the value ending at at.
	find  bool
	at    int64
	found []any
}

// step is one step of a walker's path: an object member's name as
// written, quotes included, or (name nil) an array element's index.
type step struct {
	name  []byte
	index int
}

// loc is the path at hand as a loc: where, then each member's name
// (unescaped) or element's index.
func (w *walker) loc() []any {
	loc := make([]any, 0, len(w.path)+1)
	loc = append(loc, w.where)
	for _, s := range w.path {
		if s.name == nil {
			loc = append(loc, s.index)
			continue
		}
		var name string
		if slices.Contains(s.name, '\\') {
			_ = json.Unmarshal(s.name, &name)
		} else {
			name = string(s.name[1 : len(s.name)-1])
		}
		loc = append(loc, name)
	}
	return loc
}

func (w *walker) space() {
	for w.i < len(w.body) {
		switch w.body[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *walker) fail(msg, typ string) {
	w.errs = append(w.errs, FieldError{Loc: w.loc(), Msg: msg, Type: typ})
}

// member reads the value at s (an object member or an array element) and
// the comma after it.
func (w *walker) member(s step) {
	w.path = append(w.path, s)
	w.value()
	w.path = w.path[:len(w.path)-1]
	w.space()
	if w.body[w.i] == ',' {
		w.i++
	}
}

// value reads the value at w.i (after white space) and what it holds.
func (w *walker) value() {
	w.space()
	if w.i >= len(w.body) {
		return
	}
	start := w.i
	switch c := w.body[w.i]; {
	case c == '{':
		w.i++
		for {
			w.space()
			if w.body[w.i] == '}' {
				w.i++
				break
			}
			nameStart := w.i
			w.str() // a name that is not Unicode is refused at its object
			name := w.body[nameStart:w.i]
			w.space()
			w.i++ // ':'
			w.member(step{name: name})
		}
	case c == '[':
		w.i++
		for n := 0; ; n++ {
			w.space()
			if w.body[w.i] == ']' {
				w.i++
				break
			}
			w.member(step{index: n})
		}
	case c == '"':
		w.str()
	case c == '-' || c >= '0' && c <= '9':
		w.number()
	default: // true, false, null
		for w.i < len(w.body) && w.body[w.i] >= 'a' && w.body[w.i] <= 'z' {
			w.i++
		}
	}
	// encoding/json reports a literal at its end, an object or an array
	// given where it does not fit just past its opening bracket.
	composite := w.body[start] == '{' || w.body[start] == '['
	if w.find && w.found == nil && (int64(w.i) == w.at || composite && int64(start+1) == w.at) {
		w.found = w.loc()
	}
}

// str reads a string (w.i at its opening quote) and checks it is Unicode.
func (w *walker) str() {
	start := w.i
	w.i++
	bad := false
	for w.body[w.i] != '"' {
		if w.body[w.i] != '\\' {
			w.i++
			continue
		}
		if w.body[w.i+1] != 'u' {
			w.i += 2
			continue
		}
		r := hex4(w.body[w.i+2 : w.i+6])
		w.i += 6
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // a high surrogate: a low one must follow
			if w.i+6 <= len(w.body) && w.body[w.i] == '\\' && w.body[w.i+1] == 'u' {
				if lo := hex4(w.body[w.i+2 : w.i+6]); lo >= 0xdc00 && lo <= 0xdfff {
					w.i += 6
					continue
				}
			}
			bad = true
		case utf16.IsSurrogate(r): // a low surrogate alone
			bad = true
		}
	}
	w.i++
	if w.find {
		return
	}
	if bad || !utf8.Valid(w.body[start:w.i]) {
		w.fail("Input should be a valid string: a lone surrogate or bytes that are not UTF-8", "string_unicode")
	}
}

func hex4(b []byte) rune {
	n, err := strconv.ParseUint(string(b), 16, 32)
	if err != nil {
		return utf8.RuneError
	}
	return rune(n)
}

// number reads a number (w.i at its first character) and checks it.
func (w *walker) number() {
	start := w.i
	integer := true // spelt as an integer: no fraction, no exponent
	for ; w.i < len(w.body); w.i++ {
		c := w.body[w.i]
		if c == '.' || c == 'e' || c == 'E' {
			integer = false
		} else if (c < '0' || c > '9') && c != '-' && c != '+' {
			break
		}
	}
	if w.find {
		return
	}
	if integer && w.i-start <= 15 {
		return // a float64 holds it exactly, spelt as it is to stay
	}
	text := string(w.body[start:w.i])
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		w.fail("Input should be a finite number that fits a 64-bit float", "finite_number")
		return
	}
	if integer || f != math.Trunc(f) || math.Abs(f) > maxExactInteger || f == 0 && !mantissaZero(text) {
		return
	}
	if w.out == nil {
		w.out = make([]byte, 0, len(w.body))
	}
	w.out = append(w.out, w.body[w.copied:start]...)
	w.out = strconv.AppendInt(w.out, int64(f), 10)
	w.copied = w.i
}

// mantissaZero reports whether a number's digits before its exponent are
// all 0 (so 0.0e5 is zero, and 1e-400 is not).
func mantissaZero(text string) bool {
	for _, c := range []byte(text) {
		switch {
		case c == 'e' || c == 'E':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}
