package apperr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var snakeCase = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// Every entry has a snake_case status of one kind and a sentence for a
// message; a status shared by entries tells the caller different things.
func TestCatalogEntries(t *testing.T) {
	kindOf := map[string]Kind{}
	seen := map[string]bool{}
	for _, e := range Catalog {
		if !snakeCase.MatchString(e.Status) {
			t.Errorf("%q is not snake_case", e.Status)
		}
		if !slices.Contains(Kinds, e.Kind) {
			t.Errorf("%s: unknown kind %q", e.Status, e.Kind)
		}
		if k, ok := kindOf[e.Status]; ok && k != e.Kind {
			t.Errorf("%s is both %s and %s", e.Status, k, e.Kind)
		}
		kindOf[e.Status] = e.Kind
		if m := e.Message; m == "" || !unicode.IsUpper([]rune(m)[0]) || !strings.HasSuffix(m, ".") {
			t.Errorf("%s: message %q is not a sentence", e.Status, m)
		}
		if key := e.Status + "\x00" + e.Message; seen[key] {
			t.Errorf("%s: %q is declared twice", e.Status, e.Message)
		} else {
			seen[key] = true
		}
	}
}

// Every exported variable of catalog.go, and every function building an
// *Error, is in Catalog.
func TestCatalogListsEveryEntry(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "catalog.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	listed := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl: // those that build an *Error
			if r := d.Type.Results; r != nil && len(r.List) == 1 {
				if star, ok := r.List[0].Type.(*ast.StarExpr); ok {
					if id, ok := star.X.(*ast.Ident); ok && id.Name == "Error" {
						declared = append(declared, d.Name.Name)
					}
				}
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				v, ok := s.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range v.Names {
					if n.Name != "Catalog" {
						declared = append(declared, n.Name)
						continue
					}
					ast.Inspect(v.Values[i], func(x ast.Node) bool {
						if id, ok := x.(*ast.Ident); ok {
							listed[id.Name] = true
						}
						return true
					})
				}
			}
		}
	}
	for _, name := range declared {
		if ast.IsExported(name) && !listed[name] {
			t.Errorf("%s is not in Catalog", name)
		}
	}
}

// builders are apperr's functions that take a status: only the catalog
// calls them.
var builders = map[string]bool{"New": true, "NotFoundError": true, "ConflictError": true, "ForbiddenError": true, "InvalidError": true}

// No Go file of the repository but this package's builds an application
// error itself, with a builder or an Error literal (httpx.Error is an
// alias): every error is the catalog's.
func TestCatalogIsTheOnePlace(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Skip("not in the monorepo")
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			abs, _ := filepath.Abs(path)
			name := d.Name()
			if abs == self || name == "vendor" || name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		local := map[string]string{} // local import name -> package
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			base := p[strings.LastIndex(p, "/")+1:]
			if !strings.HasSuffix(p, "/pkg/apperr") && !strings.HasSuffix(p, "/pkg/httpx") {
				continue
			}
			name := base
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = base
		}
		if len(local) == 0 {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && local[x.Name] == "apperr" && builders[sel.Sel.Name] {
						t.Errorf("%s: apperr.%s: declare the error in pkg/apperr/catalog.go", fset.Position(n.Pos()), sel.Sel.Name)
					}
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && local[x.Name] != "" && sel.Sel.Name == "Error" {
						t.Errorf("%s: an Error literal: declare the error in pkg/apperr/catalog.go", fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d Go files under %s", files, root)
	}
}
