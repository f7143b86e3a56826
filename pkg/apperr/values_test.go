package apperr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Numbers: what fits a float64 passes, an integral value is spelt as an
// integer, what does not fit is refused at its loc, indices included.
func TestCheckJSONValuesNumbers(t *testing.T) {
	for in, want := range map[string]string{
		`{"n":5.0}`:                       `{"n":5}`,
		`{"n":5e0,"m":50e-1,"k":-2.50E1}`: `{"n":5,"m":5,"k":-25}`,
		`[1.0, 2.5, 3, -0.0, 0.0e5]`:      `[1, 2.5, 3, 0, 0]`,
		`{"n":1e20}`:                      `{"n":1e20}`,   // beyond 2^53: left as written
		`{"n":1e-400}`:                    `{"n":1e-400}`, // not zero, though a float64 reads 0
		`{"n":12345678901234567890123}`:   `{"n":12345678901234567890123}`,
		`{"s":"5.0","n":7}`:               `{"s":"5.0","n":7}`,
		` 9007199254740992.0 `:            ` 9007199254740992 `,
	} {
		got, err := CheckJSONValues([]byte(in), "body")
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	body := `{"chat_history":[{"time_in_call_secs":1},{"time_in_call_secs":1e400}],"x":-1` + string(bytes.Repeat([]byte("0"), 400)) + `}`
	_, err := CheckJSONValues([]byte(body), "body")
	var v ValidationErrors
	if !errors.As(err, &v) || len(v) != 2 {
		t.Fatalf("1e400: %v", err)
	}
	if fmt.Sprint(v[0].Loc) != "[body chat_history 1 time_in_call_secs]" || v[0].Type != "finite_number" || fmt.Sprint(v[1].Loc) != "[body x]" {
		t.Errorf("errors: %+v", v)
	}
}

// Strings: a lone surrogate, escaped or raw, is refused; pairs and other
// escapes pass; keys are checked too.
func TestCheckJSONValuesStrings(t *testing.T) {
	for _, ok := range []string{`{"s":"\ud83d\ude00 é \\ud800 \" \/"}`, `["\uD83D\uDE00"]`, `{"a\u00e9":"x"}`} {
		if got, err := CheckJSONValues([]byte(ok), "body"); err != nil || string(got) != ok {
			t.Errorf("%s: %s %v", ok, got, err)
		}
	}
	for in, loc := range map[string]string{
		`{"data":{"m":"a\ud800b"}}`:      "[body data m]",
		`{"data":["ok","\udc00"]}`:       "[body data 1]",
		`{"s":"\ud800\u0041"}`:           "[body s]",
		`{"s":"\ud800"}`:                 "[body s]",
		"{\"s\":\"\xed\xa0\x80\"}":       "[body s]",
		"{\"s\":\"\xff\"}":               "[body s]",
		`{"k\ud800":1}`:                  "[body]",
		`{"s":"\ud800\\udc00"}`:          "[body s]",      // an escaped backslash, not a pair
		`{"a\u00e9":[0,{"s":"\udc00"}]}`: "[body aé 1 s]", // a name unescaped in the loc
	} {
		_, err := CheckJSONValues([]byte(in), "body")
		var v ValidationErrors
		if !errors.As(err, &v) || len(v) != 1 || fmt.Sprint(v[0].Loc) != loc || v[0].Type != "string_unicode" {
			t.Errorf("%s: %v, want string_unicode at %s", in, err, loc)
		}
	}
}

// DecodeJSON applies the rules, and its type errors name the value with
// its indices.
func TestDecodeJSONNumberRulesAndLoc(t *testing.T) {
	var in struct {
		Limit   int `json:"new_turns_limit"`
		History []struct {
			At *float64 `json:"time_in_call_secs"`
			N  int      `json:"n"`
		} `json:"chat_history"`
	}
	if err := DecodeJSON([]byte(`{"new_turns_limit":5.0,"chat_history":[{"time_in_call_secs":2e0}]}`), &in); err != nil || in.Limit != 5 || *in.History[0].At != 2 {
		t.Fatalf("5.0: %v %+v", err, in)
	}
	for body, want := range map[string]string{
		`{"chat_history":[{"time_in_call_secs":1},{"time_in_call_secs":1e400}]}`: "[body chat_history 1 time_in_call_secs] finite_number",
		`{"chat_history":[{"n":1},{"n":1},{"n":2.5}]}`:                           "[body chat_history 2 n] type_error",
		`{"chat_history":[{"n":"x"}]}`:                                           "[body chat_history 0 n] type_error",
		`{"new_turns_limit":5.5}`:                                                "[body new_turns_limit] type_error",
		`{"chat_history":[{"n":1},{"n":{"a":[1]}}]}`:                             "[body chat_history 1 n] type_error",
		`{"chat_history":[{"n":1},{"n":[1,2]}]}`:                                 "[body chat_history 1 n] type_error",
		`{"chat_history":[{"n":1},7]}`:                                           "[body chat_history 1] type_error",
	} {
		err := DecodeJSON([]byte(body), &in)
		var v ValidationErrors
		if !errors.As(err, &v) || len(v) != 1 || fmt.Sprint(v[0].Loc)+" "+v[0].Type != want {
			t.Errorf("%s: %v, want %s", body, err, want)
		}
	}
}

// FuzzCheckJSONValues: on any input the check answers without panicking;
// what it passes is valid JSON that encoding/json reads to the same
// values (numbers as float64), every string of it valid Unicode as it
// came, and checking it again changes nothing.
func FuzzCheckJSONValues(f *testing.F) {
	for _, s := range []string{`{"a":[1.0,2e3,"x\u00e9",{"b":null}]}`, `"\ud800"`, `1e400`, `[-0.0, 5E-1, 1e-400]`, "\"\xff\"", `{"k":"\ud83d\ude00"}`, `[`, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, at := range []int64{0, 1, int64(len(body) / 2), int64(len(body))} {
			if loc := LocAt(body, at, "body"); loc != nil && loc[0] != "body" {
				t.Fatalf("LocAt(%d) = %v", at, loc)
			}
		}
		out, err := CheckJSONValues(body, "body")
		if !json.Valid(body) {
			if err != nil || !bytes.Equal(out, body) {
				t.Fatalf("malformed JSON is left to the decoder: %q %v", out, err)
			}
			return
		}
		if err != nil {
			var v ValidationErrors
			if !errors.As(err, &v) || len(v) == 0 {
				t.Fatalf("error %v is not a 422", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q became %q, not JSON", body, out)
		}
		var before, after any
		if json.Unmarshal(body, &before) != nil || json.Unmarshal(out, &after) != nil {
			t.Fatal("unreadable")
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%q read as %v, respelt %q as %v", body, before, out, after)
		}
		if !utf8.Valid(out) || replacements(after) != written(out) {
			t.Fatalf("passed text that is not Unicode: %q", out)
		}
		again, err := CheckJSONValues(out, "body")
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not stable: %q -> %q %v", out, again, err)
		}
		walkNumbers(t, after)
	})
}

// replacements counts U+FFFD in v's strings and keys: where Go read a
// lone surrogate, or where the body wrote one.
func replacements(v any) int {
	n := 0
	switch v := v.(type) {
	case string:
		n = strings.Count(v, string(utf8.RuneError))
	case []any:
		for _, e := range v {
			n += replacements(e)
		}
	case map[string]any:
		for k, e := range v {
			n += replacements(k) + replacements(e)
		}
	}
	return n
}

// writtenFFFD is U+FFFD as an escape (not one whose backslash is itself
// escaped).
var writtenFFFD = regexp.MustCompile(`(?i)\\+ufffd`)

// written counts the U+FFFD a body writes, as such or escaped.
func written(body []byte) int {
	n := bytes.Count(body, []byte(string(utf8.RuneError)))
	for _, m := range writtenFFFD.FindAllIndex(body, -1) {
		if (m[1]-m[0]-5)%2 == 1 { // an odd run of backslashes: the last escapes u
			n++
		}
	}
	return n
}

func walkNumbers(t *testing.T, v any) {
	switch v := v.(type) {
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			t.Fatalf("passed a number that is not finite: %v", v)
		}
	case []any:
		for _, e := range v {
			walkNumbers(t, e)
		}
	case map[string]any:
		for _, e := range v {
			walkNumbers(t, e)
		}
	}
}

// BenchmarkCheckJSONValues is the check every write's body takes: a
// ticket create's body, nothing to refuse or respell.
func BenchmarkCheckJSONValues(b *testing.B) {
	body := []byte(`{"title":"Refund promised","qa_comment":"The agent promised a refund it cannot give","priority":"high","issue_type":"policy","labels":["refunds","escalate"],"first_seen_unix_secs":1796591720,"last_seen_unix_secs":1796591780}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CheckJSONValues(body, "body"); err != nil {
			b.Fatal(err)
		}
	}
}
