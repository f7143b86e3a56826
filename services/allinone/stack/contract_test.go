package stack

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/contract"
)

// The contract test: every answer the stack tests get through call is
// checked against the OpenAPI document the gateway serves (its status is
// one the operation documents, its body matches that status's schema), and
// so is the body of every request that succeeded. When the whole package
// ran, every operation must have been seen answering each of its
// documented success statuses: an operation the tests never reach is one
// whose document nothing checks.
var exchanges struct {
	once   sync.Once
	doc    *contract.Document
	err    error
	router *mux.Router

	mu   sync.Mutex
	seen map[string]bool // "operation status"
}

func contractDocument() (*contract.Document, *mux.Router, error) {
	exchanges.once.Do(func() {
		b, err := api.OpenAPI()
		if err != nil {
			exchanges.err = err
			return
		}
		if exchanges.doc, exchanges.err = contract.Load(b); exchanges.err != nil {
			return
		}
		exchanges.router = mux.NewRouter()
		for _, op := range api.Operations {
			api.Route(exchanges.router, op).Name(op.Name)
		}
		exchanges.seen = map[string]bool{}
	})
	return exchanges.doc, exchanges.router, exchanges.err
}

// checkContract validates one exchange of call against the document.
func checkContract(t *testing.T, req *http.Request, reqBody string, resp *http.Response, body []byte) {
	t.Helper()
	doc, router, err := contractDocument()
	if err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	var m mux.RouteMatch
	if !router.Match(req, &m) || m.Route == nil || m.MatchErr != nil {
		return // not an operation: an unknown route, a wrong method, the probes
	}
	name := m.Route.GetName()
	op := api.Operations[slices.IndexFunc(api.Operations, func(o api.Operation) bool { return o.Name == name })]
	documented, err := doc.Operation(req.Method, op.Path)
	if err != nil {
		t.Errorf("contract: %s (%s): %v", req.Method, name, err)
		return
	}
	if req.Method == http.MethodHead {
		body = nil // a HEAD answer's headers describe a body it does not send
	}
	if err := documented.CheckResponse(resp.StatusCode, resp.Header, body); err != nil {
		t.Errorf("contract: the %d answer of %s %s (%s) does not match its document: %v\n%.500s", resp.StatusCode, req.Method, req.URL.Path, name, err, body)
	}
	if resp.StatusCode < 300 {
		header := req.Header.Clone()
		if reqBody != "" && header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/json") // what the API takes any body for
		}
		replay := &http.Request{Method: req.Method, URL: req.URL, Header: header}
		if err := documented.CheckRequest(replay, m.Vars, asRead(op, reqBody)); err != nil {
			t.Errorf("contract: a request %s %s (%s) succeeded that its document refuses: %v\n%.500s", req.Method, req.URL.String(), name, err, reqBody)
		}
		exchanges.mu.Lock()
		exchanges.seen[fmt.Sprintf("%s %d", name, resp.StatusCode)] = true
		exchanges.mu.Unlock()
	}
}

// asRead is body as the operation's handler reads it once the edge let it
// through (api.CheckBody): optional members sent as null, which the
// document's info says are taken as absent, and members named like a
// property but for their case left out. What the handler reads is what
// the document must describe.
func asRead(op api.Operation, body string) []byte {
	if body == "" {
		return nil
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	if api.CheckBody(r, op) != nil {
		return []byte(body)
	}
	read, err := io.ReadAll(r.Body)
	if err != nil {
		return []byte(body)
	}
	return read
}

// partial reports whether the run was asked for part of the package.
func partial() bool {
	for _, f := range []string{"test.run", "test.skip", "test.list"} {
		if flag.Lookup(f).Value.String() != "" {
			return true
		}
	}
	return testing.Short()
}

// TestMain runs the package, then, when every test ran and passed, fails
// if an operation was never seen succeeding.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && !partial() {
		var missing []string
		for _, op := range api.Operations {
			for _, status := range op.Success {
				if !exchanges.seen[fmt.Sprintf("%s %d", op.Name, status)] {
					missing = append(missing, fmt.Sprintf("%s %s (%s) answering %d", op.Method, op.Path, op.Name, status))
				}
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "contract: no test saw these operations succeed, so nothing checked their document:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// TestOpenAPIServedAndComplete: the gateway serves its document and the
// reference page without a key, the page needs nothing from elsewhere,
// and every route the gateway serves is in the document.
func TestOpenAPIServedAndComplete(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), nil)
	r := call(t, s, "GET", api.OpenAPIPath, "", "")
	if r.Code != 200 || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("document: %d %s", r.Code, r.Header)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("document: %v %.200s", err, r.Body)
	}

	r = call(t, s, "GET", api.DocsPath+"/", "", "")
	if r.Code != 200 || !strings.Contains(string(r.Body), api.OpenAPIPath) {
		t.Fatalf("reference page: %d %.300s", r.Code, r.Body)
	}
	assets := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(string(r.Body), -1)
	if len(assets) == 0 {
		t.Fatal("the reference page loads no assets")
	}
	for _, a := range assets {
		if !strings.HasPrefix(a[1], api.DocsPath+"/") {
			t.Errorf("the reference page loads %s from elsewhere", a[1])
			continue
		}
		if r := call(t, s, "GET", a[1], "", ""); r.Code != 200 || len(r.Body) == 0 {
			t.Errorf("asset %s: %d", a[1], r.Code)
		}
	}

	// What the reference page has not got is answered as any unknown
	// path is, in the error shape.
	wantError(t, call(t, s, "GET", api.DocsPath+"/no-such-asset.js", "", ""), 404, "route_not_found")
	wantError(t, call(t, s, "GET", api.DocsPath+"/../"+strings.TrimPrefix(api.OpenAPIPath, "/"), "", ""), 404, "route_not_found")

	r = call(t, s, "GET", api.AsyncAPIPath, "", "")
	if r.Code != 200 || !strings.Contains(string(r.Body), `"asyncapi": "3.0.0"`) {
		t.Fatalf("AsyncAPI document: %d %.200s", r.Code, r.Body)
	}
	routes := s.Gateway().Routes()
	if !slices.Contains(routes, "GET "+api.GetAgent.Path) || !slices.Contains(routes, "GET "+api.OpenAPIPath) {
		t.Fatalf("the gateway's routes miss some it serves: %v", routes)
	}
	for _, route := range routes {
		method, path, _ := strings.Cut(route, " ")
		if path == api.DocsPath+"/" || path == api.ConsolePath+"/" {
			path += "{asset}" // a prefix: the pages and their assets
		}
		if doc.Paths[path][strings.ToLower(method)] == nil {
			t.Errorf("the gateway serves %s, which the document lacks", route)
		}
	}
}
