package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A handler is written one way: an api.HandlerFunc reads its request
// through its api.Call (caller, path ids, query, body) and returns the
// answer's body or an error, which api.Handle writes. So no ports package
// reads the router's variables, writes a response or decodes a body
// itself: it links neither gorilla/mux nor pkg/httpx, and of net/http it
// names only status and method constants.
func TestHandlersAreWrittenOneWay(t *testing.T) {
	files := portsFiles(t)
	if len(files) < 10 {
		t.Fatalf("found %d files in services/*/ports, want every service's: %v", len(files), files)
	}
	for _, path := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range handlerViolations(fset, f) {
			t.Errorf("%s: write the handler with package api's family (api.Call, api.HandlerFunc), not by hand", v)
		}
	}
}

// The check finds each way around the family.
func TestTheHandlerCheckFindsWhatItForbids(t *testing.T) {
	src := `package ports

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

func (h *Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, mux.Vars(r)["agent_id"])
	return nil
}

func ok() (int, string) { return http.StatusCreated, http.MethodGet }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "get.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(handlerViolations(fset, f), "\n")
	for _, want := range []string{"imports github.com/gorilla/mux", "imports " + module + "pkg/httpx", "http.ResponseWriter", "http.Request"} {
		if !strings.Contains(got, want) {
			t.Errorf("the check misses %s; it found:\n%s", want, got)
		}
	}
	if strings.Contains(got, "StatusCreated") || strings.Contains(got, "MethodGet") {
		t.Errorf("status and method constants are allowed; the check found:\n%s", got)
	}
}

// handlerViolations are the places in f that write a handler by hand.
func handlerViolations(fset *token.FileSet, f *ast.File) []string {
	var out []string
	httpName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case strings.HasPrefix(path, "github.com/gorilla/"), path == module+"pkg/httpx":
			out = append(out, fmt.Sprintf("%s: imports %s", fset.Position(imp.Pos()), path))
		case path == "net/http":
			httpName = "http"
			if imp.Name != nil {
				httpName = imp.Name.Name
			}
		}
	}
	if httpName == "" {
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == httpName {
			if name := sel.Sel.Name; !strings.HasPrefix(name, "Status") && !strings.HasPrefix(name, "Method") {
				out = append(out, fmt.Sprintf("%s: uses http.%s", fset.Position(sel.Pos()), name))
			}
		}
		return true
	})
	return out
}

// portsFiles are the Go files (tests aside) of every services/*/ports
// package, a service added later included.
func portsFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}\t{{join .GoFiles \" \"}}", services+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s...: %v\n%s", services, err, out)
	}
	var files []string
	for line := range strings.Lines(string(out)) {
		dir, names, _ := strings.Cut(strings.TrimSpace(line), "\t")
		if filepath.Base(dir) != "ports" || filepath.Base(filepath.Dir(filepath.Dir(dir))) != "services" {
			continue
		}
		for _, name := range strings.Fields(names) {
			files = append(files, filepath.Join(dir, name))
		}
	}
	return files
}
