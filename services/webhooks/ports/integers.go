package ports

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// integerLiterals checks that the integer fields of an event's data (the
// ones its data schema types integer) are written as integers that fit
// in 64 bits. The edge has already respelt an integral 12.0 or 1e3 as
// the integer it is (apperr.CheckJSONValues); the schema takes 2^70 for
// an integer, as JSON Schema does, but spec 6.2's integers, and the
// receivers that decode them, are 64-bit.
func integerLiterals(event string, data json.RawMessage) error {
	name := dataSchemaOf(event)
	if name == "" {
		return nil
	}
	s, err := api.Schema(name)
	if err != nil {
		return err
	}
	var errs apperr.ValidationErrors
	checkIntegers(s, data, []any{"body", "data"}, &errs)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// dataSchemaOf names the schema of an event's data ("" when free-form).
func dataSchemaOf(event string) string {
	for _, e := range domain.Catalog {
		if e.Name == event {
			return e.DataSchema
		}
	}
	return ""
}

func checkIntegers(schema map[string]any, raw json.RawMessage, loc []any, errs *apperr.ValidationErrors) {
	if hasType(schema, "integer") {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		if n, ok := v.(json.Number); ok {
			if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
				*errs = append(*errs, apperr.FieldError{Loc: loc, Msg: "Input should be a valid integer", Type: "int_type"})
			}
		}
		return
	}
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return // not an object (null): the schema has judged it
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sub, ok := props[name].(map[string]any)
		if v, present := obj[name]; ok && present {
			checkIntegers(sub, v, append(slices.Clip(loc), name), errs)
		}
	}
}

func hasType(schema map[string]any, want string) bool {
	switch t := schema["type"].(type) {
	case string:
		return t == want
	case []any:
		return slices.Contains(t, any(want))
	}
	return false
}
