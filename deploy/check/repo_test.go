package check

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the repository's top directory (this package is deploy/check).
const repoRoot = "../.."

func repoPath(parts ...string) string {
	return filepath.Join(append([]string{repoRoot}, parts...)...)
}

func readRepoFile(t *testing.T, parts ...string) string {
	t.Helper()
	b, err := os.ReadFile(repoPath(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var envTag = regexp.MustCompile(`env:"(VOICEAI_[A-Z0-9_]+)"`)

// configuredVariables are the VOICEAI_* variables some binary reads: the
// names in the config structs' env tags across pkg and services.
func configuredVariables(t *testing.T) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	for _, dir := range []string{"pkg", "services"} {
		err := filepath.WalkDir(repoPath(dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range envTag.FindAllStringSubmatch(string(b), -1) {
				vars[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(vars) < 20 {
		t.Fatalf("found only %d configured variables: the source layout changed", len(vars))
	}
	return vars
}

// unknownVariables returns the names in set that no binary reads.
func unknownVariables(known map[string]bool, set []string) []string {
	var unknown []string
	for _, name := range set {
		if strings.HasPrefix(name, "VOICEAI_") && !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	return unknown
}

// commandExists reports whether services/<service>/cmd/<command> is a
// command of the repository (what deploy/Dockerfile builds).
func commandExists(service, command string) bool {
	if command == "" {
		command = service
	}
	st, err := os.Stat(repoPath("services", service, "cmd", command, "main.go"))
	return err == nil && !st.IsDir()
}

// goConstant returns the string value of `name = "value"` in a source file.
func goConstant(t *testing.T, name string, file ...string) string {
	t.Helper()
	m := regexp.MustCompile(name + `\s*=\s*"([^"]+)"`).FindStringSubmatch(readRepoFile(t, file...))
	if m == nil {
		t.Fatalf("constant %s not found in %s", name, filepath.Join(file...))
	}
	return m[1]
}
