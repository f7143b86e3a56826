package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// queryParam is one documented query parameter of an operation.
type queryParam struct {
	name  string // as it stands in the URL
	typ   string // the JSON type of its value, or of each item of a list
	array bool   // repeated (form, explode): every value is an item
}

// querySchemas holds, by operation name, the compiled schema of an
// operation's query as one object, and its parameters.
var querySchemas sync.Map

type compiledQuery struct {
	schema *jsonschema.Schema
	params []queryParam
}

// CheckQuery checks the query parameters op documents against their
// schemas in the document (type, range, enum), so a handler reads only
// values the document allows and the document says all a handler
// checks of them. Parameters it does not document are left alone; an
// empty value counts as absent, as handlers read it.
func CheckQuery(r *http.Request, op Operation) error {
	_, err := parseQuery(r, op)
	return err
}

// DecodeQuery decodes the query of the operation r is served as (Handle's)
// into the struct v points to, by the JSON names of its fields, which
// are the parameters' names: integers and booleans as such, repeated
// parameters as slices. Handle has checked them against the document, so
// a use case receives values, not strings to check again.
func DecodeQuery(r *http.Request, v any) error {
	op, ok := r.Context().Value(opKey{}).(Operation)
	if !ok {
		return errors.New("api: DecodeQuery outside an operation's handler")
	}
	instance, err := parseQuery(r, op)
	if err != nil {
		return err
	}
	b, err := json.Marshal(instance)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// parseQuery is op's documented query as JSON values, checked against
// their schemas.
func parseQuery(r *http.Request, op Operation) (map[string]any, error) {
	instance := map[string]any{}
	if len(op.Query) == 0 {
		return instance, nil
	}
	cq, err := queryOf(op)
	if err != nil {
		return nil, fmt.Errorf("operation %s: %w", op.Name, err)
	}
	q := r.URL.Query()
	var errs apperr.ValidationErrors
	for _, p := range cq.params {
		values := q[p.name]
		if len(values) == 0 || (!p.array && values[0] == "") {
			continue
		}
		if !p.array {
			if len(values) > 1 {
				// Which one was meant cannot be told: neither is taken.
				errs = append(errs, apperr.FieldError{Loc: []any{"query", p.name}, Msg: "Input should be given once", Type: "value_error"})
				continue
			}
			v, fe := queryValue(p.typ, values[0], p.name)
			if fe != nil {
				errs = append(errs, *fe)
				continue
			}
			instance[p.name] = v
			continue
		}
		items := make([]any, 0, len(values))
		parsed := true
		for i, s := range values {
			v, fe := queryValue(p.typ, s, p.name, i)
			if fe != nil {
				errs = append(errs, *fe)
				parsed = false
				continue
			}
			items = append(items, v)
		}
		if parsed { // else its items' indexes would shift
			instance[p.name] = items
		}
	}
	// What parsed is checked too: one 422 names every wrong parameter.
	err = cq.schema.Validate(instance)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		errs = append(errs, fieldErrors(verr, "query")...)
	} else if err != nil {
		return nil, err
	}
	if len(errs) == 0 {
		return instance, nil
	}
	// In the order the operation lists its parameters, whatever order
	// the validator met them in.
	order := func(fe apperr.FieldError) int {
		return slices.IndexFunc(cq.params, func(p queryParam) bool { return len(fe.Loc) > 1 && fe.Loc[1] == p.name })
	}
	slices.SortStableFunc(errs, func(a, b apperr.FieldError) int { return order(a) - order(b) })
	return nil, errs
}

// queryValue is a query string as the JSON value its schema's type
// means, or the field error of a string that is not one.
func queryValue(typ, s string, loc ...any) (any, *apperr.FieldError) {
	at := append([]any{"query"}, loc...)
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, &apperr.FieldError{Loc: at, Msg: "Input should be a valid integer, unable to parse string as an integer", Type: "int_parsing"}
		}
		return n, nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, &apperr.FieldError{Loc: at, Msg: "Input should be a valid boolean, unable to interpret input", Type: "bool_parsing"}
		}
		return b, nil
	}
	return s, nil
}

// queryOf compiles op's query as one object schema, once.
func queryOf(op Operation) (*compiledQuery, error) {
	if c, ok := querySchemas.Load(op.Name); ok {
		return c.(*compiledQuery), nil
	}
	components, err := sharedComponents()
	if err != nil {
		return nil, err
	}
	documented := components["parameters"].(map[string]any)
	properties := map[string]any{}
	cq := &compiledQuery{}
	for _, key := range op.Query {
		p, ok := documented[key].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no parameter %s in schemas.yaml", key)
		}
		name, _ := p["name"].(string)
		schema, err := resolveRefs(components, p["schema"], "parameter "+key)
		if err != nil {
			return nil, err
		}
		properties[name] = schema
		param := queryParam{name: name, typ: typeOf(schema)}
		if param.typ == "array" {
			param.array = true
			items, _ := schema.(map[string]any)["items"]
			param.typ = typeOf(items)
		}
		cq.params = append(cq.params, param)
	}
	if cq.schema, err = compile("mem:///query/"+op.Name+".json", map[string]any{"type": "object", "properties": properties}); err != nil {
		return nil, err
	}
	querySchemas.Store(op.Name, cq)
	return cq, nil
}

// typeOf is a resolved schema's JSON type: its type keyword (the first
// that is not null), or that of the first schema of an allOf or oneOf
// that says one; string when none does.
func typeOf(schema any) string {
	m, _ := schema.(map[string]any)
	switch t := m["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if s, _ := e.(string); s != "" && s != "null" {
				return s
			}
		}
	}
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		list, _ := m[key].([]any)
		for _, e := range list {
			if t := typeOf(e); t != "string" {
				return t
			}
		}
	}
	return "string"
}
