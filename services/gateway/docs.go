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
	return v5emb.NewWithConfig(swgui.Config{
		Title:       "Voice agent QA platform API",
		SwaggerJSON: api.OpenAPIPath,
		BasePath:    api.DocsPath + "/",
	})("", "", "")
}
