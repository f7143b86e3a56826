package ports

import (
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// decode gives the handler the members the schema checked: one named
// like a field but for its case is left out, however it is nested.
func TestDecodeReadsExactNames(t *testing.T) {
	body := `{"events":["call_started"],"EVENTS":["bogus"],"Url":"https://10.0.0.1/","retry_config":{"max_retries":1,"Max_Retries":1000},` +
		`"Retry_Config":{"retry_delay":0},"other":"<kept>","ſecret":"x"}`
	var in domain.Input
	if err := decode(httptest.NewRequest("POST", "/", strings.NewReader(body)), 0, &in); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in.Events, []string{"call_started"}) || in.URL != nil || in.Secret != nil ||
		in.RetryConfig == nil || *in.RetryConfig.MaxRetries != 1 || in.RetryConfig.RetryDelay != nil {
		t.Fatalf("decoded %+v (retry %+v)", in, in.RetryConfig)
	}
	// A body with exact names only is decoded as it is.
	raw := []byte(`{"event":"call_started","data":{"Call_Id":"<x>","call_id":"c"}}`)
	if got := exactMembers(raw, reflect.TypeOf(&domain.IngestInput{})); string(got) != string(raw) {
		t.Fatalf("rewrote %s as %s", raw, got)
	}
}
