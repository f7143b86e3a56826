package apitest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// Undeclared lists the members of body, an answer, that the schema called
// name does not declare, by their path ("test_runs.0.agent_responses.0.
// feedback"): a schema check passes them (the document leaves objects
// open), yet a client reading the document does not know them. A member
// is declared by its object's properties, those of the schemas it
// combines (allOf, anyOf, oneOf), or their additionalProperties (true:
// any other member); an object whose schemas list no properties is a
// map, whatever it holds.
func Undeclared(name string, body []byte) ([]string, error) {
	s, err := api.Schema(name)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %w", err)
	}
	var out []string
	undeclared([]map[string]any{s}, v, "", &out)
	slices.Sort(out)
	return out, nil
}

// undeclared adds to out the members of v that none of schemas, the
// schemas v answers at path at, declares.
func undeclared(schemas []map[string]any, v any, at string, out *[]string) {
	schemas = combined(schemas)
	switch x := v.(type) {
	case map[string]any:
		props, extra, listed, open := map[string][]map[string]any{}, []map[string]any(nil), false, false
		for _, s := range schemas {
			p, _ := s["properties"].(map[string]any)
			for k, sub := range p {
				if sub, ok := sub.(map[string]any); ok {
					props[k] = append(props[k], sub)
				}
			}
			switch a := s["additionalProperties"].(type) {
			case map[string]any:
				extra = append(extra, a)
			case bool:
				open = open || a
			}
			listed = listed || p != nil || s["additionalProperties"] != nil
		}
		if !listed {
			return // a map
		}
		for k, e := range x {
			subs := props[k]
			if subs == nil {
				subs = extra
			}
			if subs != nil {
				undeclared(subs, e, join(at, k), out)
			} else if !open {
				*out = append(*out, join(at, k))
			}
		}
	case []any:
		var items []map[string]any
		for _, s := range schemas {
			if i, ok := s["items"].(map[string]any); ok {
				items = append(items, i)
			}
		}
		if items == nil {
			return
		}
		for i, e := range x {
			undeclared(items, e, join(at, strconv.Itoa(i)), out)
		}
	}
}

// combined is schemas with the schemas each combines, at any depth.
func combined(schemas []map[string]any) []map[string]any {
	out := slices.Clone(schemas)
	for i := 0; i < len(out); i++ {
		for _, key := range []string{"allOf", "anyOf", "oneOf"} {
			list, _ := out[i][key].([]any)
			for _, s := range list {
				if s, ok := s.(map[string]any); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func join(at, member string) string {
	if at == "" {
		return member
	}
	return at + "." + member
}
