// Package contract checks an OpenAPI 3.1 document, and HTTP exchanges
// against it, for tests: the document against the OpenAPI 3.1 schema and
// its schemas against JSON Schema 2020-12; an answer's status, media type
// and body against what its operation documents; a request's parameters
// and body likewise.
//
// It reads only the document it is given (as served), never the code
// that made it, so it checks the service from outside. Schemas are
// checked with github.com/santhosh-tekuri/jsonschema/v6, compiled at their
// place in the document, so every $ref resolves as a client would resolve
// it.
package contract

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// oasSchema is the OpenAPI 3.1 schema, as published at its $id
// (https://spec.openapis.org/oas/3.1/schema/2022-10-07; Apache-2.0,
// the OpenAPI Initiative): the document's shape, each of its schemas
// left to JSON Schema's own meta-schema.
//
//go:embed oas-3.1-schema.json
var oasSchema []byte

// docURL is where the compiler knows the document.
const docURL = "mem:///openapi.json"

// Document is a parsed OpenAPI document.
type Document struct {
	doc      map[string]any
	compiler *jsonschema.Compiler

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema // by JSON pointer into the document
}

// Load parses an OpenAPI document given as JSON.
func Load(b []byte) (*Document, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("the document is not JSON: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the document is not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, err
	}
	return &Document{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}, nil
}

// Validate checks the document against the OpenAPI 3.1 schema, and each
// schema it declares against JSON Schema 2020-12 (it compiles).
func (d *Document) Validate() error {
	meta, err := jsonschema.UnmarshalJSON(bytes.NewReader(oasSchema))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	const metaURL = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"
	if err := c.AddResource(metaURL, meta); err != nil {
		return err
	}
	s, err := c.Compile(metaURL)
	if err != nil {
		return err
	}
	if err := s.Validate(d.doc); err != nil {
		return fmt.Errorf("not an OpenAPI 3.1 document: %w", err)
	}
	var errs []error
	components, _ := d.doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	for name := range schemas {
		if _, err := d.schema("/components/schemas/" + escape(name)); err != nil {
			errs = append(errs, fmt.Errorf("schema %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Operation is one operation of the document: its method and its path
// template as the document spells them.
type Operation struct {
	d      *Document
	ptr    string         // of the operation object
	item   map[string]any // its path item
	op     map[string]any
	Method string
	Path   string
}

// Operation finds the operation at method and path template.
func (d *Document) Operation(method, path string) (Operation, error) {
	paths, _ := d.doc["paths"].(map[string]any)
	item, ok := paths[path].(map[string]any)
	if !ok {
		return Operation{}, fmt.Errorf("the document has no path %s", path)
	}
	m := strings.ToLower(method)
	op, ok := item[m].(map[string]any)
	if !ok {
		return Operation{}, fmt.Errorf("the document has no %s %s", method, path)
	}
	return Operation{d: d, ptr: "/paths/" + escape(path) + "/" + m, item: item, op: op, Method: method, Path: path}, nil
}

// WatchedHeaders are the headers of the platform's own that an answer
// carrying one must declare (in the response it matches).
var WatchedHeaders = []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"}

// CheckResponse checks an answer of the operation: its status is one the
// operation documents (by number, by class as 4XX, or default), a body
// comes in a media type documented for that status, a JSON body matches
// its schema, and each of WatchedHeaders it carries is declared. An answer
// with no body needs no content.
func (o Operation) CheckResponse(status int, header http.Header, body []byte) error {
	responses, _ := o.op["responses"].(map[string]any)
	key := strconv.Itoa(status)
	if responses[key] == nil {
		key = key[:1] + "XX"
	}
	if responses[key] == nil {
		key = "default"
	}
	if responses[key] == nil {
		return fmt.Errorf("status %d is not documented", status)
	}
	ptr, response, err := o.d.deref(o.ptr+"/responses/"+key, responses[key])
	if err != nil {
		return err
	}
	declared, _ := response["headers"].(map[string]any)
	for _, name := range WatchedHeaders {
		if header.Get(name) != "" && declared[name] == nil {
			return fmt.Errorf("the %d answer carries %s, which its document does not declare", status, name)
		}
	}
	if len(body) == 0 {
		return nil
	}
	return o.d.checkContent(ptr, response, header.Get("Content-Type"), body, fmt.Sprintf("the %d answer", status))
}

// CheckRequest checks a request of the operation: every parameter it
// documents (path, query, header) is present when required and matches
// its schema, and a body comes in a documented media type and matches
// its schema. pathVars are the path's variables by name.
func (o Operation) CheckRequest(r *http.Request, pathVars map[string]string, body []byte) error {
	var errs []error
	params, err := o.parameters()
	if err != nil {
		return err
	}
	query := r.URL.Query()
	for _, p := range params {
		var values []string
		switch p.in {
		case "path":
			if v, ok := pathVars[p.name]; ok {
				values = []string{v}
			}
		case "query":
			values = query[p.name]
		case "header":
			values = r.Header.Values(p.name)
		default:
			continue
		}
		if len(values) == 0 {
			if p.required {
				errs = append(errs, fmt.Errorf("%s parameter %s is required", p.in, p.name))
			}
			continue
		}
		if err := o.d.checkParameter(p, values); err != nil {
			errs = append(errs, err)
		}
	}
	if rb, ok := o.op["requestBody"]; ok {
		ptr, requestBody, err := o.d.deref(o.ptr+"/requestBody", rb)
		if err != nil {
			return err
		}
		switch required, _ := requestBody["required"].(bool); {
		case len(body) > 0:
			if err := o.d.checkContent(ptr, requestBody, r.Header.Get("Content-Type"), body, "the body"); err != nil {
				errs = append(errs, err)
			}
		case required:
			errs = append(errs, errors.New("the body is required"))
		}
	} else if len(body) > 0 {
		errs = append(errs, errors.New("the operation takes no body"))
	}
	return errors.Join(errs...)
}

// parameter is one documented parameter, where its schema stands.
type parameter struct {
	name, in  string
	required  bool
	schemaPtr string
	schema    map[string]any
}

// parameters are the path item's parameters and the operation's, the
// operation's replacing the path item's of the same name and place.
func (o Operation) parameters() ([]parameter, error) {
	var out []parameter
	lists := []struct {
		ptr  string
		list any
	}{
		{"/paths/" + escape(o.Path) + "/parameters", o.item["parameters"]},
		{o.ptr + "/parameters", o.op["parameters"]},
	}
	for _, l := range lists {
		list, _ := l.list.([]any)
		for i, raw := range list {
			ptr, p, err := o.d.deref(fmt.Sprintf("%s/%d", l.ptr, i), raw)
			if err != nil {
				return nil, err
			}
			name, _ := p["name"].(string)
			in, _ := p["in"].(string)
			required, _ := p["required"].(bool)
			schema, _ := p["schema"].(map[string]any)
			param := parameter{name: name, in: in, required: required, schemaPtr: ptr + "/schema", schema: schema}
			replaced := false
			for j := range out {
				if out[j].name == name && out[j].in == in {
					out[j], replaced = param, true
				}
			}
			if !replaced {
				out = append(out, param)
			}
		}
	}
	return out, nil
}

// checkParameter checks a parameter's values (one, or the items of a
// repeated one) as the JSON values its schema's type makes of them.
func (d *Document) checkParameter(p parameter, values []string) error {
	if p.schema == nil {
		return nil
	}
	s, err := d.schema(p.schemaPtr)
	if err != nil {
		return err
	}
	typ := d.typeOf(p.schema)
	var instance any
	if typ == "array" {
		items, _ := p.schema["items"].(map[string]any)
		itemType := d.typeOf(items)
		list := make([]any, len(values))
		for i, v := range values {
			if list[i], err = scalar(itemType, v); err != nil {
				return fmt.Errorf("%s parameter %s: %w", p.in, p.name, err)
			}
		}
		instance = list
	} else {
		if len(values) > 1 {
			return fmt.Errorf("%s parameter %s is given %d times", p.in, p.name, len(values))
		}
		if instance, err = scalar(typ, values[0]); err != nil {
			return fmt.Errorf("%s parameter %s: %w", p.in, p.name, err)
		}
	}
	if err := s.Validate(instance); err != nil {
		return fmt.Errorf("%s parameter %s=%q: %w", p.in, p.name, strings.Join(values, ","), err)
	}
	return nil
}

// scalar is a parameter's text as the JSON value of type typ.
func scalar(typ, s string) (any, error) {
	switch typ {
	case "integer", "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return n, nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean", s)
		}
		return b, nil
	}
	return s, nil
}

// typeOf is a schema's JSON type: its type keyword (the first that is not
// null), or that of what it references or of its first subschema that
// says one; string when none does.
func (d *Document) typeOf(schema map[string]any) string {
	for range 16 {
		switch t := schema["type"].(type) {
		case string:
			return t
		case []any:
			for _, e := range t {
				if s, _ := e.(string); s != "" && s != "null" {
					return s
				}
			}
		}
		ref, _ := schema["$ref"].(string)
		if ref == "" {
			next := firstSubschema(schema)
			if next == nil {
				return "string"
			}
			schema = next
			continue
		}
		target, err := d.lookup(strings.TrimPrefix(ref, "#"))
		if err != nil {
			return "string"
		}
		schema, _ = target.(map[string]any)
	}
	return "string"
}

// firstSubschema is the first schema of schema's allOf, oneOf or anyOf;
// nil where it has none.
func firstSubschema(schema map[string]any) map[string]any {
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		if list, _ := schema[key].([]any); len(list) > 0 {
			first, _ := list[0].(map[string]any)
			return first
		}
	}
	return nil
}

// checkContent checks a body against the content of the request body or
// response object at ptr: its media type is documented there, and a JSON
// body matches the media type's schema.
func (d *Document) checkContent(ptr string, object map[string]any, contentType string, body []byte, what string) error {
	content, _ := object["content"].(map[string]any)
	if len(content) == 0 {
		return fmt.Errorf("%s has a body (%d bytes) where the document says none", what, len(body))
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("%s: Content-Type %q: %w", what, contentType, err)
	}
	media, ok := content[mediaType].(map[string]any)
	if !ok {
		return fmt.Errorf("%s comes as %s, which the document does not list", what, mediaType)
	}
	if media["schema"] == nil || (mediaType != "application/json" && !strings.HasSuffix(mediaType, "+json")) {
		return nil // only JSON bodies have a schema to check
	}
	s, err := d.schema(ptr + "/content/" + escape(mediaType) + "/schema")
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s is not JSON: %w", what, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s does not match its schema: %w", what, err)
	}
	return nil
}

// schema is the schema at ptr in the document, compiled once.
func (d *Document) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	d.schemas[ptr] = s
	return s, nil
}

// deref follows a Reference Object (an object whose $ref names a place in
// this document) to what it names, and says where that stands.
func (d *Document) deref(ptr string, v any) (string, map[string]any, error) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("%s is not an object", ptr)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return ptr, m, nil
		}
		if !strings.HasPrefix(ref, "#/") {
			return "", nil, fmt.Errorf("%s: reference %s leaves the document", ptr, ref)
		}
		ptr = strings.TrimPrefix(ref, "#")
		var err error
		if v, err = d.lookup(ptr); err != nil {
			return "", nil, err
		}
	}
	return "", nil, fmt.Errorf("%s: references nest too deep", ptr)
}

// lookup is the value at a JSON pointer into the document.
func (d *Document) lookup(ptr string) (any, error) {
	var v any = d.doc
	for _, token := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		switch node := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = node[token]; !ok {
				return nil, fmt.Errorf("the document has nothing at %s", ptr)
			}
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(node) {
				return nil, fmt.Errorf("the document has nothing at %s", ptr)
			}
			v = node[i]
		default:
			return nil, fmt.Errorf("the document has nothing at %s", ptr)
		}
	}
	return v, nil
}

// escape is a member name as a JSON pointer token, made safe for the
// fragment of a URL.
func escape(name string) string {
	token := strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
	return url.PathEscape(token)
}
