package modelclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// Finding 8 of issue 47: an endpoint that answers at once and then
// trickles its body a byte at a time fails the turn with its own
// per-attempt time-out, an endpoint error, long before the run's time
// limit, and is not reported as that limit.
func TestTricklingEndpointIsItsOwnTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	e := endpoints()
	e.Timeout = 100 * time.Millisecond
	m, err := e.For(context.Background(), "ws_1", model.ParseAgentConfig([]byte(
		`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"`+srv.URL+`","model_id":"team"}}}}`)), nil)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_, _, err = m.Respond(ctx, model.Conversation{Turns: []model.Turn{{Role: "user", Text: "hi"}}})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("err %v, run ctx %v", err, ctx.Err())
	}
	if !model.IsEndpointError(err) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v: want an endpoint error, not the run's deadline", err)
	}
	if got := err.Error(); strings.Contains(got, "time limit") || !strings.Contains(got, "timed out") || !strings.Contains(got, "100ms") {
		t.Fatalf("the run's error reads %q", got)
	}
}
