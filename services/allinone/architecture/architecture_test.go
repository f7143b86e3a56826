// Package architecture holds the tests of the tree's shape: rules about
// which package may link what, checked on the real import graph.
package architecture

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// infrastructure is what a use-case layer must not link: it declares the
// ports it needs and adapters bring NATS and MongoDB.
var infrastructure = []string{"github.com/nats-io/", "go.mongodb.org/"}

const services = "github.com/voiceai-platform/voiceai/services/"

// Every services/*/app package is a pure use-case layer: no NATS, no
// MongoDB among its dependencies, direct or not.
func TestAppsLinkNoInfrastructure(t *testing.T) {
	apps := appPackages(t)
	if len(apps) < 5 {
		t.Fatalf("found %d app packages under %s, want every service's: %v", len(apps), services, apps)
	}
	for _, pkg := range apps {
		t.Run(strings.TrimPrefix(pkg, services), func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
			}
			var linked []string
			for dep := range strings.Lines(string(out)) {
				for _, prefix := range infrastructure {
					if strings.HasPrefix(dep, prefix) {
						linked = append(linked, strings.TrimSpace(dep))
					}
				}
			}
			if len(linked) > 0 {
				t.Errorf("%s links infrastructure; declare a port in app and implement it in adapters:\n  %s", pkg, strings.Join(linked, "\n  "))
			}
		})
	}
}

// appPackages are the services' use-case packages (services/<name>/app),
// a service added later included.
func appPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", services+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s...: %v\n%s", services, err, out)
	}
	var apps []string
	for line := range strings.Lines(string(out)) {
		pkg := strings.TrimSpace(line)
		if name, ok := strings.CutSuffix(strings.TrimPrefix(pkg, services), "/app"); ok && !strings.Contains(name, "/") {
			apps = append(apps, pkg)
		}
	}
	return apps
}

// Only the packages the Makefile names in STORE_PKGS link the embedded
// store's FerretDB and SQLite: `make test` vets and tests those without
// -race and every other package with it, so a race-enabled build never
// compiles them (a large share of a cold run). A test that needs the store
// starts it as a process (testenv.StartMongo).
func TestOnlyTheStorePackagesLinkFerretDB(t *testing.T) {
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var patterns, all []string
	for line := range strings.Lines(string(makefile)) {
		if rest, ok := strings.CutPrefix(line, "STORE_PKGS :="); ok {
			patterns = strings.Fields(rest)
		}
		if rest, ok := strings.CutPrefix(line, "PKGS  :="); ok {
			all = strings.Fields(rest)
		}
	}
	if len(patterns) == 0 || len(all) == 0 {
		t.Fatal("the Makefile defines no STORE_PKGS or PKGS")
	}
	// PKGS spells its services with a make function; go list wants them
	// one by one.
	var services []string
	for _, p := range all {
		if !strings.Contains(p, "$(") {
			services = append(services, p)
		}
	}
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			services = append(services, "./services/"+e.Name()+"/...")
		}
	}
	list := func(args ...string) string {
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir = "../../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	allowed := map[string]bool{}
	for line := range strings.Lines(list(patterns...)) {
		allowed[strings.TrimSpace(line)] = true
	}
	deps := list(append([]string{"-test", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, services...)...)
	for line := range strings.Lines(deps) {
		fields := strings.Fields(line)
		pkg := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(fields[0]))[0]
		pkg = strings.TrimSuffix(pkg, ".test")
		if allowed[pkg] {
			continue
		}
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, "github.com/FerretDB/") || strings.HasPrefix(dep, "modernc.org/sqlite") {
				t.Errorf("%s links %s: start the store as a process (testenv.StartMongo), or add the package to STORE_PKGS in the Makefile", fields[0], dep)
				break
			}
		}
	}
}

// executableMagic starts a compiled program: ELF, Mach-O (both byte
// orders, and universal), PE.
var executableMagic = [][]byte{{0x7f, 'E', 'L', 'F'}, {0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf},
	{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}, {0xca, 0xfe, 0xba, 0xbe}, {'M', 'Z'}}

// No compiled program is tracked: every clone would download it, and it
// is built from the sources anyway (a 34 MB binary of each of three
// services once was).
func TestNoCompiledProgramIsTracked(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): nothing tracked to check", err)
	}
	root := strings.TrimSpace(string(top))
	files, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range strings.Split(strings.TrimSuffix(string(files), "\x00"), "\x00") {
		f, err := os.Open(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		_ = f.Close()
		checked++
		for _, magic := range executableMagic {
			if n >= len(magic) && bytes.Equal(head[:len(magic)], magic) {
				t.Errorf("%s is a compiled program: untrack it (git rm --cached) and ignore it", name)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d tracked files; the tree has more", checked)
	}
}
