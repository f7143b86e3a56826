package check

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var envRead = regexp.MustCompile(`(?:env:"|Getenv\("|LookupEnv\(")(VOICEAI_[A-Z0-9_]+)`)

// listed is the names of the string slice `var <name> = []string{…}` in
// pkg/config/variables.go.
func listed(t *testing.T, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)var ` + name + ` = \[\]string\{(.*?)\n\}`).FindStringSubmatch(readRepoFile(t, "pkg", "config", "variables.go"))
	if m == nil {
		t.Fatalf("no var %s in pkg/config/variables.go", name)
	}
	var out []string
	for _, q := range regexp.MustCompile(`"(VOICEAI_[A-Z0-9_]+)"`).FindAllStringSubmatch(m[1], -1) {
		out = append(out, q[1])
	}
	return out
}

// config.Variables, what every binary warns of a VOICEAI_* variable
// outside of at start, is exactly what the code reads outside its tests;
// config.TestHarness only what the tests read.
func TestTheKnownVariablesAreWhatTheCodeReads(t *testing.T) {
	read, readByTests := map[string]bool{}, map[string]bool{}
	for _, dir := range []string{"pkg", "services"} {
		err := filepath.WalkDir(repoPath(dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			into := read
			if strings.HasSuffix(path, "_test.go") {
				into = readByTests
			}
			for _, m := range envRead.FindAllStringSubmatch(string(b), -1) {
				into[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for name := range read {
		want = append(want, name)
	}
	slices.Sort(want)
	if got := listed(t, "Variables"); !slices.Equal(got, want) {
		t.Errorf("config.Variables lists %v\nthe code reads %v", got, want)
	}
	for _, name := range listed(t, "TestHarness") {
		if !readByTests[name] || read[name] {
			t.Errorf("config.TestHarness lists %s, which the tests do not read, or the code does", name)
		}
	}
}
