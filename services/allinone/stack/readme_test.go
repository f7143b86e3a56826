package stack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// readmeCommand is one command example of the README, its continuation
// lines joined.
type readmeCommand struct {
	line int // where it starts in the README
	text string
}

// readmeCommands are the curl and voiceai examples of the README's sh
// blocks, with the shell assignments before them (KEY=…, export
// VOICEAI_BASE_URL…) that they rely on. (The deployment blocks' exports
// make new secrets for a new deployment; the stack here has its own.)
func readmeCommands(t *testing.T, readme []byte) []readmeCommand {
	t.Helper()
	var out []readmeCommand
	inBlock, pending := false, ""
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```sh"):
			inBlock = true
			continue
		case strings.HasPrefix(line, "```"):
			inBlock = false
			continue
		case !inBlock:
			continue
		}
		if pending == "" {
			start = n
		}
		pending += strings.TrimSuffix(line, `\`) + " "
		if strings.HasSuffix(line, `\`) {
			continue
		}
		cmd := strings.TrimSpace(pending)
		pending = ""
		if strings.HasPrefix(cmd, "curl ") || strings.HasPrefix(cmd, "bin/voiceai ") || strings.HasPrefix(cmd, "KEY=") ||
			strings.HasPrefix(cmd, "export VOICEAI_BASE_URL") {
			out = append(out, readmeCommand{line: start, text: cmd})
		}
	}
	return out
}

// Every curl and voiceai example of the README runs against a stack, its
// placeholders filled with real ids, and succeeds: a README that rots
// fails here. Commands that run until stopped (listen, tail) must still be
// running after a few seconds.
func TestReadmeExamplesRun(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: " + err.Error())
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	commands := readmeCommands(t, readme)
	if len(commands) < 10 {
		t.Fatalf("found only %d command examples in the README: the extraction is broken", len(commands))
	}

	work := t.TempDir()
	s := start(t, filepath.Join(work, "data"), func(c *Config) {
		c.BootstrapAdminKey = adminKey
		c.RateLimitPerMinute, c.RateLimitPerHour = 100_000, 1_000_000
		c.Outbound.AllowHosts = "127.0.0.1"
	})
	if err := os.WriteFile(filepath.Join(work, "data", "admin.key"), []byte(adminKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "bin", "voiceai")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "services", "cli", "cmd", "voiceai")).CombinedOutput(); err != nil {
		t.Fatalf("build voiceai: %v\n%s", err, out)
	}

	// What the placeholders stand for.
	agent := agentWith(t, s)
	tests := []string{createTest(t, s, hoursTest), createTest(t, s, strings.Replace(hoursTest, "Opening hours", "Opening hours again", 1))}
	ticket := decodeTicket(t, call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"title":"README","qa_comment":"x"}`)).AgentqaTicketID
	receiver := newFailableReceiver(t)
	webhook := createWebhook(t, s, `{"url":"`+receiver.URL+`","events":["ticket_created"]}`)
	decodeTicket(t, call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"title":"to deliver","qa_comment":"x"}`))
	var delivery string
	eventually(t, 10*time.Second, "a delivery in the webhook's log", func() bool {
		page := hookLog(t, s, webhook, "")
		if len(page.RecentDeliveries) > 0 {
			delivery = page.RecentDeliveries[0].DeliveryID
		}
		return delivery != ""
	})
	testIDs := 0
	fill := strings.NewReplacer(
		"127.0.0.1:8080", s.Addr, "localhost:8080", s.Addr,
		"agent_01j…", agent, "tkt_01j…", ticket, "whk_01j…", webhook, "dlv_…", delivery,
		"<user_id>", "sa_admin", "<service_account_user_id>", "sa_admin",
		"localhost:3000", strings.TrimPrefix(receiver.URL, "http://"),
	)
	placeholder := regexp.MustCompile(`…|<[a-z_]+>`)

	env := append(os.Environ(), "VOICEAI_BOOTSTRAP_ADMIN_KEY="+adminKey, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	var script strings.Builder // assignments carry over to the commands after them
	for _, c := range commands {
		text := fill.Replace(c.text)
		for strings.Contains(text, "test_01j…") { // each a different test
			text = strings.Replace(text, "test_01j…", tests[testIDs%len(tests)], 1)
			testIDs++
		}
		if m := placeholder.FindString(text); m != "" {
			t.Errorf("README line %d: no value for the placeholder %q in %s", c.line, m, c.text)
			continue
		}
		if strings.HasPrefix(text, "KEY=") || strings.HasPrefix(text, "export ") {
			script.WriteString(text + "\n")
			continue
		}
		if strings.HasPrefix(text, "curl ") {
			text = strings.Replace(text, "curl ", "curl --fail-with-body --max-time 30 ", 1)
		}
		runsUntilStopped := strings.Contains(text, " listen ") || strings.Contains(text, " tail ")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if runsUntilStopped {
			ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		}
		cmd := exec.CommandContext(ctx, "bash", "-c", script.String()+text)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		switch {
		case runsUntilStopped && ctx.Err() != nil:
			// Still running when stopped, as it should be.
		case err == nil:
		case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(text, "tests run"):
			// Some run failed: the command worked (exit 1 is its verdict).
		default:
			t.Errorf("README line %d: %s\n%v\n%s", c.line, c.text, err, out)
			continue
		}
		t.Logf("README line %d ran: %s\n%s", c.line, text, firstLines(out, 5))
	}
	if testIDs == 0 {
		t.Error("no README example names a test: the placeholders changed")
	}
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… (%d more bytes)", len(b)))
	}
	return strings.Join(lines, "\n")
}
