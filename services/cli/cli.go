// Package cli is the voiceai command line: the platform's public HTTP API
// for people and CI jobs. Run builds the whole command tree, so tests call
// it in-process exactly as the binary does.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes: CI tells a failed test from a broken run by them.
const (
	ExitOK     = 0 // done; with tests run --wait, every run passed
	ExitFailed = 1 // tests run --wait: at least one run failed
	ExitError  = 2 // anything else: bad usage, bad key, unknown id, network, time-out
	// ExitUngated: tests run --wait --min-judge-agreement: the judge of some
	// test agrees with people's labels less than asked (or has too few), so
	// the verdicts were not used to gate.
	ExitUngated = 3
)

// DefaultBaseURL is where `make run` serves the API.
const DefaultBaseURL = "http://127.0.0.1:8080"

// errTestsFailed ends a command with ExitFailed; its summary is printed.
var errTestsFailed = errors.New("some tests failed")

// Run executes the command line args (without the program name) and
// returns the process exit code. Configuration comes from VOICEAI_BASE_URL
// and VOICEAI_API_KEY unless flags override them.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := &app{stdout: stdout, stderr: stderr}
	root := app.command()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errTestsFailed):
		return ExitFailed
	case errors.Is(err, errJudgeUncalibrated):
		return ExitUngated
	}
	fmt.Fprintln(stderr, "error:", err)
	return ExitError
}

// app holds the global flags and the writers of one Run.
type app struct {
	stdout, stderr io.Writer
	baseURL, key   string
	json           bool
}

func (a *app) command() *cobra.Command {
	root := &cobra.Command{
		Use:   "voiceai",
		Short: "Command line for the voiceai platform: run agent tests, manage agents, keys, tickets and webhooks",
		Long: `voiceai talks to the platform's public HTTP API.

Configuration: VOICEAI_BASE_URL (default ` + DefaultBaseURL + `) and VOICEAI_API_KEY,
or the --base-url and --api-key flags, which take precedence.

Exit codes: 0 success (tests run --wait: every run passed), 1 tests run --wait:
some run failed, 2 any error (usage, bad key, unknown id, network, time-out),
3 tests run --wait --min-judge-agreement: a test's judge is below the agreement
asked for, so its verdicts do not gate.`,
		SilenceUsage:  true, // an API error is not a usage error
		SilenceErrors: true, // Run prints errors, once
		// Flags are checked before anything is sent.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return checkDurations(cmd) },
	}
	f := root.PersistentFlags()
	f.StringVar(&a.baseURL, "base-url", "", "API base URL (env VOICEAI_BASE_URL, default "+DefaultBaseURL+")")
	f.StringVar(&a.key, "api-key", "", "API key (env VOICEAI_API_KEY)")
	f.BoolVar(&a.json, "json", false, "print the API's JSON answer instead of a table")
	// The command tree: each group and its subcommands.
	root.AddCommand(
		group("tests", "Agent tests: list, show, run, show an invocation, load tests, export and apply",
			a.testsListCommand(), a.testsShowCommand(), a.testsRunCommand(), a.testsInvocationCommand(),
			a.testsLoadCommand(), a.testsLoadResultCommand(), a.testsExportCommand(), a.testsApplyCommand()),
		group("agents", "Agents: list, show, export and apply",
			a.agentsListCommand(), a.agentsShowCommand(), a.agentsExportCommand(), a.agentsApplyCommand()),
		group("keys", "API keys of the workspace's service accounts: list, create, revoke",
			a.keysListCommand(), a.keysCreateCommand(), a.keysRevokeCommand()),
		a.membersCommand(),
		group("tickets", "Conversation triage tickets: list, show, assign",
			a.ticketsListCommand(), a.ticketsShowCommand(), a.ticketsAssignCommand()),
		group("conversations", "The conversations the platform has recorded: list, show with the transcript",
			a.conversationsListCommand(), a.conversationsShowCommand()),
		group("webhooks", "Webhooks: list, create, delete, delivery logs, resend and recover deliveries, listen locally",
			a.webhooksListCommand(), a.webhooksCreateCommand(), a.webhooksDeleteCommand(), a.webhooksLogsCommand(),
			a.webhooksResendCommand(), a.webhooksRecoverCommand(), a.webhooksListenCommand()),
		group("judge", "The judge's verdicts checked by people: label runs and conversations, the queue to review, the judge report, judges compared",
			a.judgeReportCommand(), a.judgeQueueCommand(), a.judgeLabelCommand(),
			a.judgeAnalyseCommand(), a.judgeLabelConversationCommand(), a.judgeRejudgeCommand()),
		group("events", "Events on the bus: tail them as they are stored",
			a.eventsTailCommand()),
	)
	return root
}

// positiveDurations are the duration flags that must be more than 0: how
// often to poll, how long to wait.
var positiveDurations = []string{"poll", "timeout"}

// checkDurations refuses, as a usage error, a negative value of any
// duration flag of cmd (each counts back from now or bounds a wait: a
// negative one was silently ignored or panicked), and a zero --poll or
// --timeout.
func checkDurations(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Value.Type() != "duration" {
			return
		}
		d, _ := cmd.Flags().GetDuration(f.Name)
		switch {
		case d < 0:
			err = fmt.Errorf("--%s %s: a duration cannot be negative (write --%s %s)", f.Name, d, f.Name, -d)
		case d == 0 && slices.Contains(positiveDurations, f.Name):
			err = fmt.Errorf("--%s %s: must be more than 0, e.g. --%s %s", f.Name, d, f.Name, f.DefValue)
		}
	})
	return err
}

// client builds the API client from flags, then the environment. It is
// made only by commands that call the API, so --help needs neither.
func (a *app) client() (*client, error) {
	base := firstNonEmpty(a.baseURL, os.Getenv("VOICEAI_BASE_URL"), DefaultBaseURL)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an http(s) URL", base)
	}
	key := firstNonEmpty(a.key, os.Getenv("VOICEAI_API_KEY"))
	if key == "" {
		return nil, errors.New("no API key: set VOICEAI_API_KEY or pass --api-key")
	}
	// A whole request, body included, is bounded; waiting for a test
	// invocation is bounded by tests run --timeout instead.
	return &client{base: strings.TrimRight(base, "/"), key: key, http: &http.Client{Timeout: 2 * time.Minute}}, nil
}

// group is a command that only groups its subcommands. Called alone, or
// with a word that names none of them, it is a usage error (exit 2), as an
// unknown command is at the top: a mistyped step in a script must not pass.
func group(use, short string, subcommands ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			if len(args) == 0 {
				return fmt.Errorf("%s needs a command: %s (see --help)", cmd.CommandPath(), strings.Join(names, ", "))
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
				msg += "; did you mean " + strings.Join(near, " or ") + "?"
			}
			return errors.New(msg)
		}}
	cmd.SuggestionsMinimumDistance = 2 // as cobra's root has by default
	cmd.AddCommand(subcommands...)
	return cmd
}

// withClient is the RunE of a command that calls the API: the client is
// made from the flags and the environment first.
func (a *app) withClient(run func(cmd *cobra.Command, c *client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		return run(cmd, c, args)
	}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// printJSON writes an API answer as it came, ending with a newline.
func (a *app) printJSON(raw []byte) {
	a.stdout.Write(raw)
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		fmt.Fprintln(a.stdout)
	}
}

// moreHint tells, on stderr so stdout stays a clean table, how to get the
// next page.
func (a *app) moreHint(hasMore bool, next *string) {
	if hasMore && next != nil && *next != "" {
		fmt.Fprintf(a.stderr, "more results: add --cursor %s\n", *next)
	}
}

// waitingClient is the API client and the context of a command that
// starts something on the server and, with --wait, follows it: the wait is
// bounded by --timeout. cancel is never nil.
func (a *app) waitingClient(ctx context.Context, wait bool, timeout time.Duration) (*client, context.Context, context.CancelFunc, error) {
	c, err := a.client()
	if err != nil {
		return nil, nil, nil, err
	}
	if !wait {
		return c, ctx, func() {}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return c, ctx, cancel, nil
}

// started says what a command that does not wait started: the server's
// answer with --json, else the message.
func (a *app) started(raw []byte, format string, args ...any) {
	if a.json {
		a.printJSON(raw)
		return
	}
	fmt.Fprintf(a.stdout, format, args...)
}

// stoppedWaiting says why following what (still running on the server)
// stopped: the --timeout, or an interrupt; any other err is itself.
func stoppedWaiting(err error, timeout time.Duration, what string) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("timed out after %s waiting for %s; it goes on running on the server", timeout, what)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("interrupted while waiting for %s; it goes on running on the server", what)
	}
	return err
}

// fetch calls r for a command: with --json it prints the answer as it
// came and reports there is nothing left to show; else it decodes the
// answer into out for the command to render.
func (a *app) fetch(ctx context.Context, r route, ids []string, query url.Values, body, out any) (show bool, err error) {
	c, err := a.client()
	if err != nil {
		return false, err
	}
	raw, err := c.call(ctx, r, ids, query, body, out)
	if err != nil {
		return false, err
	}
	if a.json {
		a.printJSON(raw)
		return false, nil
	}
	return true, nil
}
