package requestid

import (
	"context"
	"testing"
)

func TestTheIDTravelsInTheContext(t *testing.T) {
	if got := From(context.Background()); got != "" {
		t.Fatalf("a bare context carries %q", got)
	}
	ctx := With(context.Background(), "req_1")
	if got := From(ctx); got != "req_1" {
		t.Fatalf("got %q, want req_1", got)
	}
	if got := From(With(ctx, "req_2")); got != "req_2" {
		t.Fatalf("an inner id: got %q, want req_2", got)
	}
}
