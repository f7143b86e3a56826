package domain

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The rules of a test body, the schema's and the domain's together, are
// tested where a request meets both, at the edge: ports/testbody_test.go.

func TestDefinitionDropsRecordFieldsAndNulls(t *testing.T) {
	body := `{"id":"test_1","name":"N","type":"llm","parent_folder_id":"tfld_1","access_info":{"a":1},
		"success_condition":"c","failure_examples":null,"dynamic_variables":{"x":"y"},"unknown_extra":[1,2]}`
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	def := Definition(raw)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(def, &got); err != nil {
		t.Fatalf("definition is not JSON: %v: %s", err, def)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	want := map[string]bool{"success_condition": true, "dynamic_variables": true, "unknown_extra": true}
	if len(got) != len(want) {
		t.Fatalf("definition keys %v, want %v", keys, want)
	}
	for k := range got {
		if !want[k] {
			t.Fatalf("definition keeps %q: %s", k, def)
		}
	}
	in, err := ParseDefinition(def)
	if err != nil {
		t.Fatal(err)
	}
	if in.SuccessCondition == nil || *in.SuccessCondition != "c" || in.DynamicVariables["x"] != "y" || in.Name != nil || in.Type != nil {
		t.Fatalf("parsed definition %+v", in)
	}
}

func TestParseDefinition(t *testing.T) {
	in, err := ParseDefinition(nil)
	if err != nil || !reflect.DeepEqual(in, TestInput{}) {
		t.Fatalf("empty definition: %+v, %v", in, err)
	}
	if _, err := ParseDefinition([]byte(`{"chat_history":"not a list"}`)); err == nil {
		t.Fatal("a definition of the wrong shape parsed without error")
	}
}
