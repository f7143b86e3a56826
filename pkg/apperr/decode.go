package apperr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// DecodeJSON decodes a JSON request body into dst with the API's errors:
// malformed JSON is invalid (400), a value of the wrong type a validation
// error at its field (422), a non-object where an object is wanted too.
// Unknown fields are ignored.
func DecodeJSON(body []byte, dst any) error {
	if err := checkObject(body, dst); err != nil {
		return err
	}
	body, err := CheckJSONValues(body, "body")
	if err != nil {
		return err
	}
	return decode(body, dst)
}

// DecodeCheckedJSON is DecodeJSON for a body whose values were checked
// already (CheckJSONValues gave it).
func DecodeCheckedJSON(body []byte, dst any) error {
	if err := checkObject(body, dst); err != nil {
		return err
	}
	return decode(body, dst)
}

// checkObject refuses a body meant for an object that is another value:
// `null`, `[]` or `"x"` would otherwise decode into a zero-valued
// request (an "Untitled" create).
func checkObject(body []byte, dst any) error {
	if wantsObject(dst) {
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] != '{' && json.Valid(t) {
			return ValidationErrors{{Loc: []any{"body"}, Msg: "Input should be a valid dictionary or object", Type: "model_type"}}
		}
	}
	return nil
}

// decode decodes body into dst, with DecodeJSON's errors.
func decode(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			// The value's own loc, with the indices of the lists it is
			// in (the error's Field names no index).
			loc := LocAt(body, typeErr.Offset, "body")
			if loc == nil && typeErr.Field != "" {
				loc = []any{"body"}
				for _, p := range strings.Split(typeErr.Field, ".") {
					if i, err := strconv.Atoi(p); err == nil {
						loc = append(loc, i)
					} else {
						loc = append(loc, p)
					}
				}
			}
			if loc == nil {
				loc = []any{"body"}
			}
			return ValidationErrors{{Loc: loc, Msg: fmt.Sprintf("Input should be a valid %s", jsonKind(typeErr.Type.Kind().String())), Type: "type_error"}}
		}
		return MalformedJSON(syntaxMessage(err))
	}
	// Anything but white space after the value is malformed. (Decoder.More
	// reports false before a stray '}' or ']', so it cannot tell.)
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return MalformedJSONAfterValue
	}
	return nil
}

func syntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return "cannot parse body"
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	default:
		return "number"
	}
}

// wantsObject reports whether dst points to a struct or a map.
func wantsObject(dst any) bool {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map)
}
