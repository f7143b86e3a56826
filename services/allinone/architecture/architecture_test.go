// Package architecture holds the tests of the tree's shape: rules about
// which package may link what, checked on the real import graph.
package architecture

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// forbidden is what a use-case layer must not link, with or without its
// tests: it declares the ports it needs and adapters bring NATS and
// MongoDB; the edge brings HTTP (gorilla/mux, httpx), metrics
// (Prometheus) and the telemetry SDK and exporters (the OpenTelemetry
// API, which only carries a trace context, is allowed).
var forbidden = []string{
	"github.com/nats-io/",
	"go.mongodb.org/",
	"github.com/gorilla/",
	module + "pkg/httpx",
	"github.com/prometheus/",
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters/",
	"go.opentelemetry.io/contrib/",
}

const (
	module   = "github.com/voiceai-platform/voiceai/"
	services = module + "services/"
)

// isForbidden reports whether dep (an import path, maybe a test variant
// "p [q.test]") is or lies under a forbidden prefix.
func isForbidden(dep string) bool {
	dep, _, _ = strings.Cut(dep, " ")
	for _, prefix := range forbidden {
		if dep == prefix || strings.HasPrefix(dep, prefix) && (strings.HasSuffix(prefix, "/") || strings.HasPrefix(dep[len(prefix):], "/")) {
			return true
		}
	}
	return false
}

// Every services/*/app package is a pure use-case layer: nothing
// forbidden among its dependencies, direct or not, nor among its tests'
// (memory adapters live in adapters/memory, pure test helpers in
// pkg/testkit, tests of the edge in ports).
func TestAppsLinkNoInfrastructure(t *testing.T) {
	apps := appPackages(t)
	if len(apps) < 25 { // five services' apps and their suites
		t.Fatalf("found %d app packages under %s, want every service's: %v", len(apps), services, apps)
	}
	for _, pkg := range apps {
		t.Run(strings.TrimPrefix(pkg, services), func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}", pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps -test %s: %v\n%s", pkg, err, out)
			}
			imports := map[string][]string{}
			for line := range strings.Lines(string(out)) {
				path, deps, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
				imports[path] = strings.Fields(deps)
			}
			var linked []string
			for dep := range imports {
				if isForbidden(dep) && enteredFromOutside(imports, dep) {
					linked = append(linked, chainTo(imports, pkg, dep))
				}
			}
			if len(linked) > 0 {
				slices.Sort(linked)
				t.Errorf("%s (with its tests) links what a use-case layer must not; declare a port in app and implement it in adapters, "+
					"keep memory adapters in adapters/memory and tests of the edge in ports:\n  %s", pkg, strings.Join(linked, "\n  "))
			}
		})
	}
}

// The check sees what it forbids: the graph of a package that links NATS,
// Mongo, HTTP, Prometheus and the telemetry SDK (the process wiring) is
// found wanting.
func TestTheCheckFindsWhatItForbids(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"pkg/runtime").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps pkg/runtime: %v\n%s", err, out)
	}
	found := map[string]bool{}
	for dep := range strings.Lines(string(out)) {
		for _, prefix := range forbidden {
			if dep = strings.TrimSpace(dep); isForbidden(dep) && strings.HasPrefix(dep, prefix) {
				found[prefix] = true
			}
		}
	}
	for _, prefix := range []string{"github.com/nats-io/", "go.mongodb.org/", "github.com/gorilla/", module + "pkg/httpx", "github.com/prometheus/", "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/"} {
		if !found[prefix] {
			t.Errorf("pkg/runtime links nothing under %s: the check would not see it either", prefix)
		}
	}
	for _, ok := range []string{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/sdkx", module + "pkg/httpxtra", "net/http"} {
		if isForbidden(ok) {
			t.Errorf("%s is forbidden; only the listed packages and those under them are", ok)
		}
	}
}

// enteredFromOutside reports whether a package that is not forbidden
// imports dep: the failure names where the forbidden graph is entered,
// not all of it.
func enteredFromOutside(imports map[string][]string, dep string) bool {
	for path, deps := range imports {
		if !isForbidden(path) && slices.Contains(deps, dep) {
			return true
		}
	}
	return false
}

// chainTo is how from reaches to: the import path, shortest first found.
func chainTo(imports map[string][]string, from, to string) string {
	prev := map[string]string{}
	queue := []string{}
	// The roots: the package and its test variants.
	for path := range imports {
		if path == from || strings.HasPrefix(path, from+" [") || strings.HasPrefix(path, from+"_test ") || path == from+".test" {
			prev[path] = ""
			queue = append(queue, path)
		}
	}
	slices.Sort(queue)
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, strings.TrimPrefix(p, module))
			}
			slices.Reverse(chain)
			return strings.Join(chain, " -> ")
		}
		for _, next := range imports[cur] {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return to
}

// appPackages are the services' use-case packages (services/<name>/app)
// and the conformance suites beside them (services/<name>/app/<port>test):
// a suite gets its implementation through a factory, so it links no more
// than the port it checks. A service added later is included.
func appPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", services+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s...: %v\n%s", services, err, out)
	}
	var apps []string
	for line := range strings.Lines(string(out)) {
		pkg := strings.TrimSpace(line)
		// <name>/app or <name>/app/<suite>
		if parts := strings.Split(strings.TrimPrefix(pkg, services), "/"); len(parts) >= 2 && len(parts) <= 3 && parts[1] == "app" {
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
