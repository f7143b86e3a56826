package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// TestOpenAPIDocumentIsValid checks the document against the OpenAPI 3.1
// schema, and that it documents every operation and uses every schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	b, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s %v", e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}

	var m struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct{ Schemas, Parameters map[string]json.RawMessage }
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, op := range Operations {
		if m.Paths[op.Path][strings.ToLower(op.Method)] == nil {
			t.Errorf("%s %s (%s) is not documented", op.Method, op.Path, op.Name)
		}
	}
	for name := range m.Components.Schemas {
		if !strings.Contains(string(b), `"#/components/schemas/`+name+`"`) {
			t.Errorf("schema %s is used by nothing", name)
		}
	}
	for name := range m.Components.Parameters {
		if !slices.ContainsFunc(Operations, func(op Operation) bool { return slices.Contains(op.Query, name) }) {
			t.Errorf("parameter %s is used by nothing", name)
		}
	}
}

// TestSchemaStandsAlone: a resolved schema has no references left and
// keeps what they named.
func TestSchemaStandsAlone(t *testing.T) {
	s, err := Schema("TicketEventData")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), "$ref") || !strings.Contains(string(b), `"ticket_id"`) || !strings.Contains(string(b), `"in_progress"`) {
		t.Fatalf("resolved schema: %s", b)
	}
	if _, err := Schema("Nope"); err == nil {
		t.Fatal("an unknown schema resolved")
	}
}
