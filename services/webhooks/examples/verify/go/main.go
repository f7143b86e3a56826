// Command verify is a minimal webhook receiver that checks each delivery's
// signature: copy it into your service. WEBHOOK_SECRET is the webhook's
// signing secret; PORT the port to listen on (0: any free one).
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
)

func main() {
	secret := []byte(os.Getenv("WEBHOOK_SECRET"))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Verify the raw bytes received: a re-encoded JSON would differ.
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		// hmac.Equal takes the same time wherever the strings differ.
		if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Service-Signature"))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Deliveries may repeat (retries, resends): deduplicate on this id.
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
