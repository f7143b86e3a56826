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
	w := walker{body: body, loc: []any{where}}
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
	w := walker{body: body, loc: []any{where}, at: end, find: true}
	w.value()
	return w.found
}

// walker reads valid JSON once, keeping the path of the value at hand.
type walker struct {
	body   []byte
	i      int
	loc    []any
	errs   ValidationErrors
	out    []byte // the respelled body so far, once a number is respelled
	copied int    // body[:copied] is in out
	// LocAt's search: the loc of the value ending at at.
	find  bool
	at    int64
	found []any
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

func (w *walker) fail(loc []any, msg, typ string) {
	w.errs = append(w.errs, FieldError{Loc: slices.Clone(loc), Msg: msg, Type: typ})
}

// member reads the value at key (an object member's name or an array
// element's index) and the comma after it.
func (w *walker) member(key any) {
	w.loc = append(w.loc, key)
	w.value()
	w.loc = w.loc[:len(w.loc)-1]
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
			keyStart := w.i
			w.str(w.loc)
			raw := w.body[keyStart:w.i]
			var key string
			if slices.Contains(raw, '\\') {
				_ = json.Unmarshal(raw, &key)
			} else {
				key = string(raw[1 : len(raw)-1])
			}
			w.space()
			w.i++ // ':'
			w.member(key)
		}
	case c == '[':
		w.i++
		for n := 0; ; n++ {
			w.space()
			if w.body[w.i] == ']' {
				w.i++
				break
			}
			w.member(n)
		}
	case c == '"':
		w.str(w.loc)
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
		w.found = slices.Clone(w.loc)
	}
}

// str reads a string (w.i at its opening quote) and checks it is Unicode.
func (w *walker) str(loc []any) {
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
		w.fail(loc, "Input should be a valid string: a lone surrogate or bytes that are not UTF-8", "string_unicode")
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
	text := string(w.body[start:w.i])
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		w.fail(w.loc, "Input should be a finite number that fits a 64-bit float", "finite_number")
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
