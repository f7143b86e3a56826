package api

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// Query values are checked against their parameters' schemas in the
// document, each wrong one answered at its loc with pydantic's type.
func TestCheckQueryAnswersEveryWrongParameter(t *testing.T) {
	for _, c := range []struct {
		op    Operation
		query string
		want  []string // loc and type of each error; none: accepted
	}{
		{WebhookLogs, "limit=100&status=failed&event=call_started&start_time=1700000000", nil},
		{WebhookLogs, "limit=101", []string{"[query limit] less_than_equal"}},
		{WebhookLogs, "limit=0&status=ok", []string{"[query limit] greater_than_equal", "[query status] enum"}},
		{WebhookLogs, "limit=ten", []string{"[query limit] int_parsing"}},
		{WebhookLogs, "limit=ten&status=ok&event=nope", []string{"[query limit] int_parsing", "[query event] enum", "[query status] enum"}},
		{WebhookLogs, "end_time=0", []string{"[query end_time] greater_than_equal"}}, // not "before 1970": every attempt
		{ListInvocations, "start_time=0&end_time=1700000000000", nil},
		{WebhookLogs, "event=nope", []string{"[query event] enum"}},
		{WebhookLogs, "limit=&status=", nil}, // empty is absent
		{ListTickets, "page_size=100&status=open&sources=qa&sources=manual&sort_by=priority", nil},
		{ListTickets, "page_size=0", []string{"[query page_size] greater_than_equal"}},
		{ListTickets, "status=pending", []string{"[query status] enum"}},
		{ListTickets, "sources=qa&sources=robot", []string{"[query sources 1] enum"}},
		{ListTests, "include_folders=maybe", []string{"[query include_folders] bool_parsing"}},
		{ListTests, "page_size=x&sort_mode=bad&types=robot", []string{"[query page_size] int_parsing", "[query sort_mode] enum", "[query types 0] enum"}},
		{ListTests, "include_folders=true&types=llm&types=folder", nil},
		{ListTests, "undocumented=anything", nil},
		{ListTickets, "page_size=1&page_size=2", []string{"[query page_size] value_error"}}, // which was meant cannot be told
		{ListAgents, "sort_by=call_count_7d&sort_direction=desc", nil},                      // the SDK's AgentSortBy
		{ListAgentsAlias, "sort_by=name", nil},
		{ListAgents, "sort_by=calls", []string{"[query sort_by] enum"}},
	} {
		r := httptest.NewRequest("GET", "/x?"+c.query, nil)
		err := CheckQuery(r, c.op)
		var got []string
		var verrs apperr.ValidationErrors
		if errors.As(err, &verrs) {
			for _, e := range verrs {
				got = append(got, fmt.Sprint(e.Loc, " ", e.Type))
			}
		} else if err != nil {
			t.Fatalf("%s?%s: %v", c.op.Name, c.query, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s?%s: got %v, want %v", c.op.Name, c.query, got, c.want)
		}
	}
}

// A handler reads its query as typed values: integers, booleans and
// repeated parameters decoded by their documented types.
func TestDecodeQuery(t *testing.T) {
	var got struct {
		PageSize int      `json:"page_size"`
		Archived *bool    `json:"archived"`
		Tags     []string `json:"tags"`
		SortBy   string   `json:"sort_by"`
		Cursor   string   `json:"cursor"`
	}
	var seen error
	r := mux.NewRouter()
	Handle(r, ListAgents, func(c *Call) (any, error) {
		seen = c.Query(&got)
		return nil, seen
	})
	req := httptest.NewRequest("GET", "/v1/convai/agents?page_size=7&archived=false&tags=a&tags=b&sort_by=name&cursor=", nil)
	r.ServeHTTP(httptest.NewRecorder(), req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws", Permissions: []string{"all"}})))
	if seen != nil || got.PageSize != 7 || got.Archived == nil || *got.Archived || fmt.Sprint(got.Tags) != "[a b]" || got.SortBy != "name" || got.Cursor != "" {
		t.Fatalf("decoded %+v, %v", got, seen)
	}
	if err := DecodeQuery(httptest.NewRequest("GET", "/x", nil), &got); err == nil {
		t.Fatal("outside an operation's handler, there is no document to decode by")
	}
}

// Every operation's query compiles from the document.
func TestEveryQueryCompiles(t *testing.T) {
	for _, op := range Operations {
		if _, err := queryOf(op); err != nil {
			t.Errorf("%s: %v", op.Name, err)
		}
	}
}
