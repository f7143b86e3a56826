package stack

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The receiver snippets of the webhooks README (Go, Node, Python) verify a
// real signed delivery of the platform, and refuse a tampered one.
func TestVerificationSnippetsVerifyARealDelivery(t *testing.T) {
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

			r := call(t, s, "POST", "/v1/convai/webhooks", adminKey,
				`{"url":"http://`+addr+`/hook","secret":"`+secret+`","events":["call_ended"]}`)
			if r.Code != 201 {
				t.Fatalf("create webhook: %d %s", r.Code, r.Body)
			}
			hook := r.JSON(t)["webhook_id"].(string)
			r = call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/test", adminKey, `{"event_type":"call_ended"}`)
			if r.Code != 200 || r.JSON(t)["status"] != "success" || r.JSON(t)["response_code"] != float64(200) {
				t.Fatalf("a real delivery to the %s snippet: %d %s", snippet.lang, r.Code, r.Body)
			}

			// A body changed on the way, or a signature made with another
			// secret, is refused.
			body := []byte(`{"event":"call_ended","timestamp":"2026-01-02T03:04:05.000Z","data":{}}`)
			for name, sig := range map[string]string{
				"tampered body": "sha256=" + strings.Repeat("0", 64),
				"no signature":  "",
				"short":         "sha256=ab",
			} {
				req, _ := http.NewRequest("POST", "http://"+addr+"/hook", bytes.NewReader(body))
				if sig != "" {
					req.Header.Set("X-Service-Signature", sig)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s: the %s snippet answered %d, want 401", name, snippet.lang, resp.StatusCode)
				}
			}
		})
	}
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
