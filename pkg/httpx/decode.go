package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// DefaultMaxBody bounds a request body when a service sets no other limit.
const DefaultMaxBody = 1 << 20

// DecodeJSON reads r's body (at most maxBytes) into dst. Malformed JSON is
// a 400; a value of the wrong type is a 422 pointing at the field; an
// oversized body is a 413. Unknown fields are ignored, as the public SDK
// strips nothing it does not know and clients may be newer than we are.
func DecodeJSON(r *http.Request, maxBytes int64, dst any) error {
	body, err := ReadBody(r, maxBytes)
	if err != nil {
		return err
	}
	return decodeBytes(body, dst)
}

func decodeBytes(body []byte, dst any) error {
	// A body meant for an object must be one: `null`, `[]` or `"x"` would
	// otherwise decode into a zero-valued request (an "Untitled" create).
	if wantsObject(dst) {
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] != '{' && json.Valid(t) {
			return ValidationErrors{{Loc: []any{"body"}, Msg: "Input should be a valid dictionary or object", Type: "model_type"}}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			loc := []any{"body"}
			if typeErr.Field != "" {
				for _, p := range strings.Split(typeErr.Field, ".") {
					if i, err := strconv.Atoi(p); err == nil {
						loc = append(loc, i)
					} else {
						loc = append(loc, p)
					}
				}
			}
			return ValidationErrors{{Loc: loc, Msg: fmt.Sprintf("Input should be a valid %s", jsonKind(typeErr.Type.Kind().String())), Type: "type_error"}}
		}
		return BadRequest("malformed_json", "The request body is not valid JSON: "+syntaxMessage(err))
	}
	// Anything but white space after the value is malformed. (Decoder.More
	// reports false before a stray '}' or ']', so it cannot tell.)
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return BadRequest("malformed_json", "The request body has data after the JSON value.")
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
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	default:
		return "number"
	}
}

// ReadBody reads r's body (at most maxBytes; 413 beyond, 422 when empty)
// for handlers that decode it more than once.
func ReadBody(r *http.Request, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return nil, BadRequest("unreadable_body", "The request body could not be read.")
	}
	if int64(len(body)) > maxBytes {
		return nil, apperr.New(apperr.TooLarge, "body_too_large", fmt.Sprintf("The request body exceeds %d bytes.", maxBytes))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ValidationErrors{{Loc: []any{"body"}, Msg: "Field required", Type: "missing"}}
	}
	return body, nil
}

// DecodeBytes decodes a body read by ReadBody, with DecodeJSON's errors.
func DecodeBytes(body []byte, dst any) error { return decodeBytes(body, dst) }

// wantsObject reports whether dst points to a struct or a map.
func wantsObject(dst any) bool {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map)
}
