package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Definitions kept in a team's own repository: export writes an agent or a
// test as a file (YAML or JSON), apply creates or updates from one. A file
// that names its id updates that agent or test; one without creates it.

var (
	createAgentRoute = route{Method: post, Path: "/v1/convai/agents/create"}
	updateAgentRoute = route{Method: patch, Path: "/v1/convai/agents/{agent_id}"}
	createTestRoute  = route{Method: post, Path: "/v1/convai/agent-testing/create"}
	replaceTestRoute = route{Method: put, Path: "/v1/convai/agent-testing/{test_id}"}
)

// agentFields are what an agent file holds: its create body and its id.
var agentFields = []string{"agent_id", "name", "tags", "agent_type", "conversation_config", "platform_settings", "workflow"}

// testServerFields are what a test's answer holds that its body does not.
var testServerFields = []string{"created_at_unix_secs", "last_updated_at_unix_secs", "reliability"}

// readDefinition reads a JSON or YAML file as a JSON object. A file that
// opens with { is read as JSON: most JSON is YAML too, but not all of it
// (a \/ or a surrogate pair, as Python's json.dump writes an emoji).
func readDefinition(path string) (map[string]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	js := b
	if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) == 0 || t[0] != '{' {
		if js, err = yaml.YAMLToJSON(b); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else if !json.Valid(t) {
		return nil, fmt.Errorf("%s: not valid JSON (it opens with {)", path)
	} else {
		js = t
	}
	var def map[string]json.RawMessage
	if err := json.Unmarshal(js, &def); err != nil || def == nil {
		return nil, fmt.Errorf("%s: not an object (a definition is a map of fields)", path)
	}
	return def, nil
}

// writeDefinition prints def as YAML, or JSON with --format json.
func (a *app) writeDefinition(def map[string]json.RawMessage, format string) error {
	js, err := json.MarshalIndent(def, "", "  ")
	if err != nil {
		return err
	}
	switch format {
	case "json":
		_, err = fmt.Fprintf(a.stdout, "%s\n", js)
	case "yaml":
		var y []byte
		if y, err = yaml.JSONToYAML(js); err == nil {
			_, err = a.stdout.Write(y)
		}
	default:
		err = fmt.Errorf("--format %q: want yaml or json", format)
	}
	return err
}

// idOf takes the id field out of def.
func idOf(def map[string]json.RawMessage, field string) (string, error) {
	raw, ok := def[field]
	if !ok {
		return "", nil
	}
	delete(def, field)
	var id string
	if err := json.Unmarshal(raw, &id); err != nil || id == "" {
		return "", fmt.Errorf("%s must be a non-empty string", field)
	}
	return id, nil
}

func (a *app) agentsExportCommand() *cobra.Command {
	return a.exportCommand(exported{use: "export <agent_id>", get: getAgent,
		short: "Print an agent as a file agents apply takes (YAML, or JSON with --format json)",
		definition: func(got map[string]json.RawMessage) map[string]json.RawMessage {
			def := map[string]json.RawMessage{}
			for _, f := range agentFields {
				if v, ok := got[f]; ok && string(v) != "null" {
					def[f] = v
				}
			}
			return def
		}})
}

// exported is what export prints for one kind of definition.
type exported struct {
	use, short string
	get        route
	// definition keeps of the API's answer what apply takes.
	definition func(got map[string]json.RawMessage) map[string]json.RawMessage
}

// exportCommand prints the definition of what its argument names.
func (a *app) exportCommand(k exported) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   k.use,
		Short: k.short,
		Args:  cobra.ExactArgs(1),
		RunE: a.withClient(func(cmd *cobra.Command, c *client, args []string) error {
			var got map[string]json.RawMessage
			if _, err := c.call(cmd.Context(), k.get, args, nil, nil, &got); err != nil {
				return err
			}
			return a.writeDefinition(k.definition(got), format)
		}),
	}
	cmd.Flags().StringVar(&format, "format", "yaml", "yaml or json")
	return cmd
}

func (a *app) agentsApplyCommand() *cobra.Command {
	return a.applyCommand(applied{noun: "agent", idField: "agent_id", create: createAgentRoute, update: updateAgentRoute, updated: "updated",
		long: `agents apply reads an agent definition (what agents export prints: name, tags,
conversation_config, platform_settings, ...). With agent_id it updates that agent
(conversation_config and platform_settings are merged as the API merges them);
without, it creates one and prints its id: add it to the file to update it next time.`})
}

// applied is what apply does for one kind of definition.
type applied struct {
	noun, idField  string
	create, update route
	updated, long  string
}

// applyCommand creates from a file, or updates what its id field names.
func (a *app) applyCommand(k applied) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f <file>",
		Short: "Create " + article(k.noun) + " " + k.noun + " from a YAML or JSON file, or update the one its " + k.idField + " names",
		Long:  k.long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			def, err := readDefinition(file)
			if err != nil {
				return err
			}
			id, err := idOf(def, k.idField)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			delete(def, "id") // an agent's answer repeats agent_id as id
			c, err := a.client()
			if err != nil {
				return err
			}
			var out map[string]any
			var raw []byte
			verb := k.updated
			if id == "" {
				verb = "created"
				raw, err = c.call(cmd.Context(), k.create, nil, nil, def, &out)
			} else {
				raw, err = c.call(cmd.Context(), k.update, []string{id}, nil, def, &out)
			}
			if err != nil {
				return err
			}
			got, _ := out[k.idField].(string)
			if got == "" {
				got, _ = out["id"].(string)
			}
			a.started(raw, "%s %s %s from %s\n", verb, k.noun, firstNonEmpty(got, id), filepath.Base(file))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the "+k.noun+"'s YAML or JSON file")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func (a *app) testsExportCommand() *cobra.Command {
	return a.exportCommand(exported{use: "export <test_id>", get: getTest,
		short: "Print a test as a file tests apply takes (YAML, or JSON with --format json)",
		definition: func(def map[string]json.RawMessage) map[string]json.RawMessage {
			for _, f := range testServerFields {
				delete(def, f)
			}
			return def
		}})
}

func (a *app) testsApplyCommand() *cobra.Command {
	return a.applyCommand(applied{noun: "test", idField: "id", create: createTestRoute, update: replaceTestRoute, updated: "replaced",
		long: `tests apply reads a test definition (what tests export prints: the whole test, as
the API takes it). With id it replaces that test; without, it creates one and prints
its id: add it to the file to replace it next time.`})
}

// article is the indefinite article before noun.
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}
