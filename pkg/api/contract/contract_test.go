package contract

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const petstore = `{
  "openapi": "3.1.0",
  "info": {"title": "pets", "version": "1"},
  "paths": {
    "/pets/{pet_id}": {
      "parameters": [{"name": "pet_id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^pet_"}}],
      "patch": {
        "parameters": [
          {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 10}},
          {"name": "tag", "in": "query", "schema": {"type": "array", "items": {"enum": ["a", "b"]}}},
          {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
          {"name": "page", "in": "query", "schema": {"allOf": [{"$ref": "#/components/schemas/Page"}], "description": "a page"}}
        ],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PetPatch"}}}},
        "responses": {
          "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
          "204": {"description": "nothing"},
          "4XX": {"$ref": "#/components/responses/Error"}
        }
      }
    }
  },
  "components": {
    "schemas": {
      "Pet": {"type": "object", "required": ["id", "name"], "properties": {"id": {"type": "string"}, "name": {"type": ["string", "null"]}}},
      "PetPatch": {"type": "object", "additionalProperties": false, "properties": {"name": {"type": "string", "maxLength": 5}}},
      "Error": {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "string"}}},
      "Page": {"type": "integer", "minimum": 1}
    },
    "responses": {
      "Error": {"description": "an error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  }
}`

func load(t *testing.T, doc string) *Document {
	t.Helper()
	d, err := Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestValidate(t *testing.T) {
	if err := load(t, petstore).Validate(); err != nil {
		t.Fatalf("a valid document: %v", err)
	}
	broken := map[string]string{
		"no info":                strings.Replace(petstore, `"info": {"title": "pets", "version": "1"},`, "", 1),
		"a 2.0 version":          strings.Replace(petstore, `"3.1.0"`, `"2.0"`, 1),
		"a response without one": strings.Replace(petstore, `"204": {"description": "nothing"}`, `"204": {}`, 1),
		"a schema that is wrong": strings.Replace(petstore, `"maxLength": 5`, `"maxLength": "five"`, 1),
	}
	for name, doc := range broken {
		if err := load(t, doc).Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

func TestCheckResponse(t *testing.T) {
	op, err := load(t, petstore).Operation("PATCH", "/pets/{pet_id}")
	if err != nil {
		t.Fatal(err)
	}
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for _, ok := range []struct {
		status int
		body   string
	}{
		{200, `{"id": "pet_1", "name": null}`},
		{204, ``},
		{404, `{"detail": "no such pet"}`}, // by its class, through a response reference
	} {
		if err := op.CheckResponse(ok.status, json, []byte(ok.body)); err != nil {
			t.Errorf("%d %s: %v", ok.status, ok.body, err)
		}
	}
	for _, bad := range []struct {
		status int
		header http.Header
		body   string
	}{
		{200, json, `{"id": "pet_1"}`},        // name is required
		{200, json, `{"id": 1, "name": "x"}`}, // id is a string
		{200, json, `not json`},               //
		{200, http.Header{"Content-Type": {"text/plain"}}, `{"id": "pet_1", "name": "x"}`},
		{204, json, `{}`},               // no content documented
		{500, json, `{"detail": "x"}`},  // not documented
		{409, json, `{"message": "x"}`}, // the error shape
	} {
		if err := op.CheckResponse(bad.status, bad.header, []byte(bad.body)); err == nil {
			t.Errorf("%d %s %s: passed", bad.status, bad.header, bad.body)
		}
	}
	if _, err := load(t, petstore).Operation("GET", "/pets/{pet_id}"); err == nil {
		t.Error("an undocumented method was found")
	}
}

func TestCheckRequest(t *testing.T) {
	op, err := load(t, petstore).Operation("PATCH", "/pets/{pet_id}")
	if err != nil {
		t.Fatal(err)
	}
	check := func(target, id, body string) error {
		r := httptest.NewRequest("PATCH", target, nil)
		r.Header.Set("Content-Type", "application/json")
		return op.CheckRequest(r, map[string]string{"pet_id": id}, []byte(body))
	}
	if err := check("/pets/pet_1?limit=3&tag=a&tag=b&verbose=true&page=2", "pet_1", `{"name": "Rex"}`); err != nil {
		t.Errorf("a good request: %v", err)
	}
	for _, bad := range []struct{ target, id, body string }{
		{"/pets/dog", "dog", `{}`},                      // the path parameter's pattern
		{"/pets/pet_1?limit=11", "pet_1", `{}`},         // out of range
		{"/pets/pet_1?limit=x", "pet_1", `{}`},          // not a number
		{"/pets/pet_1?limit=1&limit=2", "pet_1", `{}`},  // given twice
		{"/pets/pet_1?tag=c", "pet_1", `{}`},            // an item outside its enum
		{"/pets/pet_1?verbose=maybe", "pet_1", `{}`},    // not a boolean
		{"/pets/pet_1", "pet_1", ``},                    // the body is required
		{"/pets/pet_1", "pet_1", `{"name": "Rexxxxx"}`}, // too long
		{"/pets/pet_1", "pet_1", `{"age": 3}`},          // not a member
	} {
		if err := check(bad.target, bad.id, bad.body); err == nil {
			t.Errorf("%s %s: passed", bad.target, bad.body)
		}
	}
}
