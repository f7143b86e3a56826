package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// The list of signed-out sessions deleted under the gateway is made
// again, and the sign-outs it held are not forgotten as if they never
// were: every session signed in before it was made is refused as ended,
// on every replica, while a session signed in after works and can be
// signed out again.
func TestSignOutsDeletedAreMadeAgainEndingTheOlderSessions(t *testing.T) {
	defer func(was time.Duration) { signOutsCheckEvery = was }(signOutsCheckEvery)
	signOutsCheckEvery = 50 * time.Millisecond
	url := testenv.StartNATS(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	replica := func() *Gateway {
		s, err := newSessions("deployment-secret")
		if err != nil {
			t.Fatal(err)
		}
		list, err := newKVSignOuts(ctx, testenv.JetStreamAt(t, url), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		list.skew = 0 // the test's clock is the server's
		s.ended = list
		return &Gateway{sessions: s, now: time.Now}
	}
	one, two := replica(), replica()
	session := func(g *Gateway, cookie string) *apperr.Error {
		_, refusal := g.session(httptest.NewRequest("GET", "http://console.example/console/session", nil), cookie)
		return refusal
	}
	// Signed in after the list was made, before it is made again below.
	signedIn := one.sessions.ended.(*kvSignOuts).kv.Made().Add(time.Millisecond)
	before, err := one.sessions.seal("vak_secret_key", signedIn, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range []*Gateway{one, two} {
		if refusal := session(g, before); refusal != nil {
			t.Fatalf("replica %d before the deletion: %v", i+1, refusal)
		}
	}

	if err := testenv.JetStreamAt(t, url).DeleteKeyValue(ctx, SignOutBucket); err != nil {
		t.Fatal(err)
	}
	// The first request to find the list gone is refused as unavailable
	// (its answer is not known) and the list is made again; a replica's
	// own check may make it first.
	testkit.Eventually(t, 15*time.Second, "the older session refused as ended on both replicas", func() bool {
		return session(one, before) == apperr.ConsoleSessionEnded && session(two, before) == apperr.ConsoleSessionEnded
	})
	after, err := two.sessions.seal("vak_secret_key", time.Now(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if refusal := session(one, after); refusal != nil {
		t.Fatalf("a session signed in after the list was made again: %v", refusal)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("DELETE", "http://console.example/console/session", nil)
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: after})
	two.signOut(w, r)
	if w.Code != http.StatusNoContent {
		t.Fatalf("sign out after the list was made again: %d %s", w.Code, w.Body)
	}
	if refusal := session(one, after); refusal != apperr.ConsoleSessionEnded {
		t.Fatalf("signed out on the list made again, on another replica: %v", refusal)
	}
}
