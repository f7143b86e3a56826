package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// The request body of every operation is checked against the schema the
// operation documents (schemas.yaml, the one the OpenAPI document
// serves) before its handler runs: types, required fields, enums,
// lengths, ranges and id grammar are said once, there, and a caller is
// told every field that is wrong at once, FastAPI's way
// ({detail: [{loc, msg, type}]}). Handlers keep the rules no schema can
// say (one field against another, against stored state).
//
// The validator is github.com/santhosh-tekuri/jsonschema/v6: JSON Schema
// 2020-12 (what OpenAPI 3.1 schemas are), compiled once, and errors that
// carry their keyword and values as types, which become the error
// entries below without parsing messages.

var compiled sync.Map // schema name -> *jsonschema.Schema

// requestSchema is the compiled schema called name.
func requestSchema(name string) (*jsonschema.Schema, error) {
	if s, ok := compiled.Load(name); ok {
		return s.(*jsonschema.Schema), nil
	}
	doc, err := Schema(name)
	if err != nil {
		return nil, err
	}
	s, err := compile("mem:///schemas/"+name+".json", doc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	compiled.Store(name, s)
	return s, nil
}

// compile compiles a resolved schema (JSON Schema 2020-12), known as url.
func compile(url string, doc any) (*jsonschema.Schema, error) {
	// The compiler wants the document as its own decoder makes it.
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, value); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// CheckBody checks r's JSON body against op's request schema and leaves
// the body readable again. A body that is empty or not JSON is left to
// the handler's decoder (which answers malformed JSON, 400, and knows
// whether the operation may go without a body).
func CheckBody(r *http.Request, op Operation) error {
	if op.Request == "" || r.Body == nil {
		return nil
	}
	body, err := httpx.ReadBodyAsSent(r.Body, op.BodyLimit())
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil {
		return nil // the handler's reader answers: unreadable, too large (413), empty
	}
	checked, err := checkBody(body, op)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(checked))
	r.ContentLength = int64(len(checked))
	return nil
}

// checkBody is CheckBody on a body read whole, and the body the handler
// is to read.
func checkBody(body []byte, op Operation) ([]byte, error) {
	// The rules every body follows whatever its schema (numbers that fit
	// a float64, integers whatever their spelling, strings that are
	// Unicode): checked first, so the schema and the handler see the
	// body as it will be stored.
	body, err := apperr.CheckJSONValues(body, "body")
	if err != nil {
		return nil, err
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return body, nil
	}
	s, err := requestSchema(op.Request)
	if err != nil {
		return nil, fmt.Errorf("operation %s: %w", op.Name, err)
	}
	if dropCaseVariants(value, s) {
		// The handler reads what the schema checks, nothing else.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // an ingested event's data is delivered as it came
		if err := enc.Encode(value); err != nil {
			return nil, err
		}
		body = buf.Bytes()
	}
	err = s.Validate(value)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		return nil, fieldErrors(verr, "body")
	}
	return body, err
}

// CheckJSON checks a JSON document against the schema called name: what
// a receiver may rely on, e.g. the data of a webhook event.
func CheckJSON(name string, doc []byte) error {
	s, err := requestSchema(name)
	if err != nil {
		return err
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(value)
}

// fieldErrors turns the validator's tree of failures into the 422 body's
// entries, one for each field that is wrong; where is the first element
// of each loc (body, query).
func fieldErrors(root *jsonschema.ValidationError, where string) apperr.ValidationErrors {
	var out apperr.ValidationErrors
	seen := map[string]bool{}
	for _, e := range leaves(root) {
		for _, fe := range fieldErrorsOf(e, where) {
			key := fmt.Sprint(fe.Loc, fe.Type)
			if !seen[key] {
				seen[key] = true
				out = append(out, fe)
			}
		}
	}
	return out
}

// leaves are the failures that say what is wrong, under the groups
// (schema, reference, allOf…) that only gather them. Of a oneOf or anyOf
// none of whose branches matched, the branch that took the value's type
// tells (a nullable enum given "x" is an enum failure, not "should be
// null"); when no branch took it, the type failure says every type.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	switch e.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		if len(e.Causes) == 0 {
			return []*jsonschema.ValidationError{e}
		}
		var want []string
		var got string
		for _, c := range e.Causes {
			l := leaves(c)
			if t, ok := onlyTypeFailure(l, e.InstanceLocation); ok {
				want = append(want, t.Want...)
				got = t.Got
				continue
			}
			return l
		}
		return []*jsonschema.ValidationError{{InstanceLocation: e.InstanceLocation, ErrorKind: &kind.Type{Got: got, Want: want}}}
	}
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// onlyTypeFailure reports whether l is a single type failure of the value
// at loc itself: the branch did not take the value's type.
func onlyTypeFailure(l []*jsonschema.ValidationError, loc []string) (*kind.Type, bool) {
	if len(l) != 1 || len(l[0].InstanceLocation) != len(loc) {
		return nil, false
	}
	t, ok := l[0].ErrorKind.(*kind.Type)
	return t, ok
}

var printer = message.NewPrinter(language.English)

func fieldErrorsOf(e *jsonschema.ValidationError, where string) []apperr.FieldError {
	loc := []any{where}
	for _, p := range e.InstanceLocation {
		if i, err := strconv.Atoi(p); err == nil {
			loc = append(loc, i)
		} else {
			loc = append(loc, p)
		}
	}
	one := func(msg, typ string) []apperr.FieldError {
		return []apperr.FieldError{{Loc: loc, Msg: msg, Type: typ}}
	}
	// eachField is one entry per named field of the object at loc.
	eachField := func(names []string, msg, typ string) []apperr.FieldError {
		out := make([]apperr.FieldError, 0, len(names))
		for _, name := range names {
			out = append(out, apperr.FieldError{Loc: append(slices.Clip(loc), name), Msg: msg, Type: typ})
		}
		return out
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		return eachField(k.Missing, "Field required", "missing")
	case *kind.DependentRequired:
		return eachField(k.Missing, "Field required with "+k.Prop, "missing")
	case *kind.Type:
		return one(typeMessage(k.Want))
	case *kind.Enum:
		return one("Input should be "+oneOf(k.Want), "enum")
	case *kind.Const:
		return one("Input should be "+quote(k.Want), "literal_error")
	case *kind.MinLength:
		return one(fmt.Sprintf("String should have at least %d character%s", k.Want, plural(k.Want)), "string_too_short")
	case *kind.MaxLength:
		return one(fmt.Sprintf("String should have at most %d character%s", k.Want, plural(k.Want)), "string_too_long")
	case *kind.Pattern:
		switch k.Want {
		case IDPattern:
			return one(apperr.IDMessage, "string_pattern_mismatch")
		case NotBlankPattern, EmptyOrNotBlankPattern:
			return one("String should have a character other than white space", "string_too_short")
		}
		return one(fmt.Sprintf("String should match pattern '%s'", k.Want), "string_pattern_mismatch")
	case *kind.Minimum:
		return one("Input should be greater than or equal to "+k.Want.RatString(), "greater_than_equal")
	case *kind.ExclusiveMinimum:
		return one("Input should be greater than "+k.Want.RatString(), "greater_than")
	case *kind.Maximum:
		return one("Input should be less than or equal to "+k.Want.RatString(), "less_than_equal")
	case *kind.ExclusiveMaximum:
		return one("Input should be less than "+k.Want.RatString(), "less_than")
	case *kind.MinItems:
		return one(fmt.Sprintf("List should have at least %d item%s", k.Want, plural(k.Want)), "too_short")
	case *kind.MaxItems:
		return one(fmt.Sprintf("List should have at most %d item%s", k.Want, plural(k.Want)), "too_long")
	case *kind.MaxProperties:
		return one(fmt.Sprintf("Object should have at most %d field%s", k.Want, plural(k.Want)), "too_long")
	case *kind.AdditionalProperties:
		return eachField(k.Properties, "Extra inputs are not permitted", "extra_forbidden")
	case *kind.UniqueItems:
		return one("List items should be unique", "value_error")
	}
	return one(e.ErrorKind.LocalizedString(printer), "value_error")
}

// IDPattern is the id grammar (ids.Valid) as a JSON Schema pattern:
// request schemas give it to every field that names a resource (the
// Id schema), so its failure reads as ids.Valid's does.
const IDPattern = "^[A-Za-z0-9_-]{1,128}$"

// NotBlankPattern is what a schema says of text that must not be blank:
// it has a character that is neither a separator nor a control character.
// (`\S` would not do: in Go's regexp, as in ECMA's without the u flag, it
// is ASCII, so a no-break space would count as text.) Every character
// unicode.IsSpace knows is one or the other, so text that passes is not
// blank after strings.TrimSpace.
const NotBlankPattern = `[^\p{Z}\p{Cc}]`

// EmptyOrNotBlankPattern is NotBlankPattern for text whose empty string
// means none (a test's success_condition: a test judged by its examples
// may send it empty, as it always could): empty, or not blank.
const EmptyOrNotBlankPattern = `^$|[^\p{Z}\p{Cc}]`

// typeMessage says which type a value should have, in pydantic's words.
func typeMessage(want []string) (string, string) {
	for _, w := range want {
		switch w {
		case "string":
			return "Input should be a valid string", "string_type"
		case "integer":
			return "Input should be a valid integer", "int_type"
		case "number":
			return "Input should be a valid number", "float_type"
		case "boolean":
			return "Input should be a valid boolean", "bool_type"
		case "array":
			return "Input should be a valid list", "list_type"
		case "object":
			return "Input should be a valid dictionary or object", "model_type"
		}
	}
	return "Input should be " + strings.Join(want, " or "), "type_error"
}

func oneOf(values []any) string {
	qs := make([]string, len(values))
	for i, v := range values {
		qs[i] = quote(v)
	}
	if len(qs) < 2 {
		return strings.Join(qs, "")
	}
	return strings.Join(qs[:len(qs)-1], ", ") + " or " + qs[len(qs)-1]
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return "'" + s + "'"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// dropCaseVariants deletes, from value's objects (nested ones too, as s
// says), the members named like one of s's properties but for their
// case ("URL" beside url), and reports whether it deleted any. The
// schema knows a member by its exact name and passes such a member by as
// an unknown one; encoding/json, which the handlers decode with, takes
// it for the property, the last of the two winning. Left in, it would
// reach a handler without having been checked.
//
// It deletes as well an optional property sent as null where its schema
// refuses null: the official SDK sends an optional left undefined as
// null, and the public API takes null for absent on every optional
// field. A property whose schema takes null (a PATCH's "null clears it")
// keeps it.
func dropCaseVariants(value any, s *jsonschema.Schema) bool {
	dropped := false
	switch v := value.(type) {
	case map[string]any:
		props := map[string][]*jsonschema.Schema{}
		collectProperties(s, props, 0)
		if len(props) == 0 {
			return false
		}
		var required map[string]bool
		for name, member := range v {
			if subs, ok := props[name]; ok && member == nil {
				if required == nil {
					required = map[string]bool{}
					collectRequired(s, required, 0)
				}
				if !required[name] && !anyAcceptsNull(subs) {
					delete(v, name)
					dropped = true
				}
				continue
			}
			if subs, ok := props[name]; ok {
				for _, sub := range subs {
					dropped = dropCaseVariants(member, sub) || dropped
				}
				continue
			}
			for p := range props {
				if strings.EqualFold(name, p) {
					delete(v, name)
					dropped = true
					break
				}
			}
		}
	case []any:
		var items []*jsonschema.Schema
		collectItems(s, &items, 0)
		for _, e := range v {
			for _, it := range items {
				dropped = dropCaseVariants(e, it) || dropped
			}
		}
	}
	return dropped
}

// maxSchemaDepth bounds the walk through references (a schema may refer
// to itself).
const maxSchemaDepth = 16

// applicators are the subschemas that apply to the same instance as s.
func applicators(s *jsonschema.Schema) []*jsonschema.Schema {
	out := slices.Concat(s.AllOf, s.AnyOf, s.OneOf)
	for _, sub := range []*jsonschema.Schema{s.Ref, s.Then, s.Else} {
		if sub != nil {
			out = append(out, sub)
		}
	}
	return out
}

// collectProperties gathers the properties that s and the subschemas
// applying with it declare, by name.
func collectProperties(s *jsonschema.Schema, into map[string][]*jsonschema.Schema, depth int) {
	if s == nil || depth > maxSchemaDepth {
		return
	}
	for name, sub := range s.Properties {
		into[name] = append(into[name], sub)
	}
	for _, sub := range applicators(s) {
		collectProperties(sub, into, depth+1)
	}
}

// collectRequired gathers the properties that s and the subschemas
// applying with it require.
func collectRequired(s *jsonschema.Schema, into map[string]bool, depth int) {
	if s == nil || depth > maxSchemaDepth {
		return
	}
	for _, name := range s.Required {
		into[name] = true
	}
	for _, sub := range applicators(s) {
		collectRequired(sub, into, depth+1)
	}
}

// anyAcceptsNull reports whether one of a property's schemas takes null.
func anyAcceptsNull(subs []*jsonschema.Schema) bool {
	for _, sub := range subs {
		if sub.Validate(nil) == nil {
			return true
		}
	}
	return false
}

// collectItems gathers the schemas of an array's items that s and the
// subschemas applying with it declare.
func collectItems(s *jsonschema.Schema, into *[]*jsonschema.Schema, depth int) {
	if s == nil || depth > maxSchemaDepth {
		return
	}
	if s.Items2020 != nil {
		*into = append(*into, s.Items2020)
	}
	*into = append(*into, s.PrefixItems...)
	for _, sub := range applicators(s) {
		collectItems(sub, into, depth+1)
	}
}
