// Command verify is a minimal webhook receiver that checks each delivery
// before trusting it: copy it into your service. WEBHOOK_SECRET is the
// webhook's signing secret; PORT the port to listen on (0: any free one).
//
// It checks ElevenLabs-Signature ("t=<unix seconds>,v0=<hex HMAC-SHA256 of
// "<t>.<raw body>">"), which signs the attempt's time with the body, so a
// delivery older than the tolerance is refused, and one seen before (a
// captured request sent again) is refused as a replay.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tolerance is how far a delivery's signed time may be from now.
const tolerance = 5 * time.Minute

// seen holds the signatures accepted within the tolerance: a request
// carrying one again is a replay. Older ones are refused by their time, so
// they can be forgotten.
var (
	mu   sync.Mutex
	seen = map[string]time.Time{}
)

// verify checks header against body at now, and that it was not used before.
func verify(secret, body []byte, header string, now time.Time) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			ts = v
		} else if v, ok := strings.CutPrefix(part, "v0="); ok {
			sig = v
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("missing or malformed signature")
	}
	// Verify the raw bytes received: a re-encoded JSON would differ.
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	// hmac.Equal takes the same time wherever the strings differ.
	if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(sig)) {
		return fmt.Errorf("bad signature")
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("timestamp outside the tolerance")
	}
	mu.Lock()
	defer mu.Unlock()
	for s, at := range seen {
		if now.Sub(at) > 2*tolerance {
			delete(seen, s)
		}
	}
	if _, dup := seen[sig]; dup {
		return fmt.Errorf("replayed delivery")
	}
	seen[sig] = now
	return nil
}

func main() {
	secret := []byte(os.Getenv("WEBHOOK_SECRET"))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := verify(secret, body, r.Header.Get("ElevenLabs-Signature"), time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// Retries and resends are new deliveries of the same event (new
		// signature): deduplicate on its id before doing the work.
		log.Printf("event %s %s", r.Header.Get("X-Service-Event"), r.Header.Get("X-Service-Event-Id"))
		w.WriteHeader(http.StatusOK) // answer fast; do slow work afterwards
	})
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}
