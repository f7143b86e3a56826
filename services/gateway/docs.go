package gateway

import (
	"net/http"

	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// documentHandler serves one of the API's documents (OpenAPI, AsyncAPI).
// It needs no key: it is what a caller reads to learn how to get one.
func documentHandler(document func() ([]byte, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, err := document()
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(doc)
	})
}

// docsHandler renders the document as a reference page: Swagger UI, its
// assets embedded in the binary (swaggest/swgui), so the page needs
// nothing from the internet.
func docsHandler() http.Handler {
	return notFoundInShape(v5emb.NewWithConfig(swgui.Config{
		Title:       "Voice agent QA platform API",
		SwaggerJSON: api.OpenAPIPath,
		BasePath:    api.DocsPath + "/",
	})("", "", ""))
}

// notFoundInShape answers what h has not got with the gateway's 404 in
// the error shape, as every other path is, rather than h's own plain
// text (the file server's "404 page not found").
func notFoundInShape(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&notFoundWriter{ResponseWriter: w, r: r}, r)
	})
}

// notFoundWriter passes an answer on unless it is a 404, which it
// replaces with the gateway's, the inner body dropped.
type notFoundWriter struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

func (w *notFoundWriter) WriteHeader(code int) {
	if code != http.StatusNotFound {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	w.Header().Del("Content-Type") // the inner body's
	httpx.NotFoundHandler().ServeHTTP(w.ResponseWriter, w.r)
}

func (w *notFoundWriter) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}
