package check

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// kedaModule is the KEDA release whose ScaledObject CRD the chart is
// checked against. The CRD comes from the module proxy, like any Go
// dependency, so the check needs no network beyond it.
const kedaModule = "github.com/kedacore/keda/v2@v2.21.0"

// crdSchema is a CRD version's openAPIV3Schema, compiled.
type crdSchema struct {
	raw      map[string]any
	compiled *jsonschema.Schema
}

func loadKEDAScaledObjectSchema(t *testing.T) *crdSchema {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", kedaModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s (the module proxy must answer): %v", kedaModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %s %v", kedaModule, mod.Error, err)
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, "config", "crd", "bases", "keda.sh_scaledobjects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1alpha1" {
			continue
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("scaledobject.json", v.Schema.OpenAPIV3Schema); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile("scaledobject.json")
		if err != nil {
			t.Fatal(err)
		}
		return &crdSchema{raw: v.Schema.OpenAPIV3Schema, compiled: s}
	}
	t.Fatal("the KEDA CRD has no v1alpha1 version")
	return nil
}

// validate checks doc against the schema (types, required fields, enums)
// and, as the API server's strict field validation does, refuses fields
// the schema does not declare.
func (s *crdSchema) validate(doc map[string]any) error {
	// Round-trip through JSON so numbers are what the validator expects.
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	if err := s.compiled.Validate(inst); err != nil {
		return err
	}
	if unknown := unknownFields(s.raw, inst, ""); len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown fields %v", unknown)
	}
	return nil
}

// unknownFields lists the paths of v that schema does not declare. The
// top-level metadata is the API server's (ObjectMeta), not the CRD's.
func unknownFields(schema map[string]any, v any, path string) []string {
	if schema["x-kubernetes-preserve-unknown-fields"] == true || path == ".metadata" {
		return nil
	}
	var out []string
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		additional, _ := schema["additionalProperties"].(map[string]any)
		for k, child := range v {
			if ps, ok := props[k].(map[string]any); ok {
				out = append(out, unknownFields(ps, child, path+"."+k)...)
			} else if additional != nil {
				out = append(out, unknownFields(additional, child, path+"."+k)...)
			} else if schema["additionalProperties"] != true {
				out = append(out, path+"."+k)
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, child := range v {
				out = append(out, unknownFields(items, child, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return out
}

func TestUnknownFieldsAreFound(t *testing.T) {
	schema := map[string]any{"properties": map[string]any{
		"spec": map[string]any{"properties": map[string]any{
			"triggers": map[string]any{"items": map[string]any{"properties": map[string]any{
				"type":     map[string]any{},
				"metadata": map[string]any{"additionalProperties": map[string]any{"type": "string"}},
			}}},
		}},
		"metadata": map[string]any{},
	}}
	doc := map[string]any{
		"metadata": map[string]any{"name": "x"},
		"spec": map[string]any{"triggers": []any{
			map[string]any{"type": "nats-jetstream", "metadata": map[string]any{"stream": "TESTJOBS"}, "metdata": "typo"},
		}, "minReplicas": 1},
	}
	got := unknownFields(schema, doc, "")
	sort.Strings(got)
	want := []string{".spec.minReplicas", ".spec.triggers[0].metdata"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("unknown fields %v, want %v", got, want)
	}
}
