package stack

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The receiver snippets of the webhooks README (Go, Node, Python) verify a
// real signed delivery of the platform (its ElevenLabs-Signature), and
// refuse a tampered one, a stale one and a replay.
func TestVerificationSnippetsVerifyARealDelivery(t *testing.T) {
	t.Parallel()
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "webhooks", "examples", "verify")
	s := startAdmin(t, localHooks)
	bin := filepath.Join(t.TempDir(), "verify")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(dir, "go")).CombinedOutput(); err != nil {
		t.Fatalf("build the Go snippet: %v\n%s", err, out)
	}
	for _, snippet := range []struct{ lang, tool, file string }{
		{"go", bin, ""},
		{"node", "node", filepath.Join(dir, "node", "verify.js")},
		{"python", "python3", filepath.Join(dir, "python", "verify.py")},
	} {
		t.Run(snippet.lang, func(t *testing.T) {
			if _, err := exec.LookPath(snippet.tool); err != nil {
				t.Skipf("%s is not installed: the %s snippet is not checked here", snippet.tool, snippet.lang)
			}
			secret := "whsec_snippet_" + snippet.lang + "_0123456789abcdef"
			addr := startSnippet(t, secret, snippet.tool, snippet.file)

			hook := createWebhook(t, s, `{"url":"http://`+addr+`/hook","secret":"`+secret+`","events":["call_ended"]}`)
			r := call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/test", adminKey, `{"event_type":"call_ended"}`)
			if r.Code != 200 || r.JSON(t)["status"] != "success" || r.JSON(t)["response_code"] != float64(200) {
				t.Fatalf("a real delivery to the %s snippet: %d %s", snippet.lang, r.Code, r.Body)
			}

			// A body changed on the way, a signature made with another
			// secret, a stale one, and a captured delivery sent again are
			// refused; a fresh one signed with the secret is accepted once.
			body := []byte(`{"event":"call_ended","timestamp":"2026-01-02T03:04:05.000Z","data":{}}`)
			now := time.Now().Unix()
			post := func(sig string) int {
				t.Helper()
				req, _ := http.NewRequest("POST", "http://"+addr+"/hook", bytes.NewReader(body))
				if sig != "" {
					req.Header.Set("ElevenLabs-Signature", sig)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			fresh := elevenLabsSignature(secret, body, now)
			for name, sig := range map[string]string{
				"tampered body":  elevenLabsSignature(secret, append([]byte(" "), body...), now),
				"another secret": elevenLabsSignature(secret+"x", body, now),
				"stale":          elevenLabsSignature(secret, body, now-10*60),
				"no signature":   "",
				"no timestamp":   strings.Split(fresh, ",")[1],
				"short":          "t=1,v0=ab",
			} {
				if code := post(sig); code != http.StatusUnauthorized {
					t.Errorf("%s: the %s snippet answered %d, want 401", name, snippet.lang, code)
				}
			}
			if code := post(fresh); code != http.StatusOK {
				t.Errorf("a fresh signed delivery: the %s snippet answered %d, want 200", snippet.lang, code)
			}
			if code := post(fresh); code != http.StatusUnauthorized {
				t.Errorf("a replay: the %s snippet answered %d, want 401", snippet.lang, code)
			}
		})
	}
}

// elevenLabsSignature is an ElevenLabs-Signature header of body at t,
// made here independently of the platform.
func elevenLabsSignature(secret string, body []byte, t int64) string {
	ts := strconv.FormatInt(t, 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return "t=" + ts + ",v0=" + hex.EncodeToString(m.Sum(nil))
}

// startSnippet runs a receiver snippet (tool, with file as its argument
// when set) on a free port and returns its address, read from the first
// line it prints.
func startSnippet(t *testing.T, secret, tool, file string) string {
	t.Helper()
	var args []string
	if file != "" {
		args = []string{file}
	}
	cmd := exec.Command(tool, args...)
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, "PORT=0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		addr, found := strings.CutPrefix(l, "listening on ")
		if !ok || !found {
			t.Fatalf("%s printed %q, want its address", tool, l)
		}
		return addr
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start within 30s", tool)
	}
	return ""
}
