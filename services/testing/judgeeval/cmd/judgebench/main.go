// Command judgebench measures the judges available here against the
// human-labelled sets of package judgeeval (make bench runs it): the
// offline judge, the default with no API key, and the first, lexical
// offline judge it replaced, always; and an
// OpenAI-compatible judge when VOICEAI_JUDGE_EVAL_BASE_URL and
// VOICEAI_JUDGE_EVAL_MODEL are set (VOICEAI_JUDGE_EVAL_API_KEY if it needs
// one). For each set it prints agreement and Cohen's κ with 95% intervals,
// the false-pass rate apart, unknown verdicts, the time per decision at
// p95 (goal < 5 ms) and the memory the judge adds (goal ≤ 150 MiB), each
// with its goal and MET or NOT MET. A goal not met is a finding, not an
// error: the command fails only when it cannot measure.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/services/testing/judgeeval"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

func main() {
	list := flag.Bool("disagreements", false, "list every case a judge decided otherwise than people")
	parallel := flag.Int("parallel", 4, "decisions asked at once of a remote judge")
	timeout := flag.Duration("timeout", 60*time.Second, "one request to a remote judge, retries apart")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *list, *parallel, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "judgebench:", err)
		os.Exit(1)
	}
}

type judge struct {
	model    runner.Model
	goals    judgeeval.Goals
	parallel int
}

func run(ctx context.Context, list bool, parallel int, timeout time.Duration) error {
	// The lexical judge first: the offline judge's memory is measured from
	// its first decision, when it loads WordNet.
	judges := []judge{{model: offline.Lexical{}, goals: judgeeval.Bar, parallel: 1}, {model: offline.Model{}, goals: judgeeval.Bar, parallel: 1}}
	if base, model := os.Getenv("VOICEAI_JUDGE_EVAL_BASE_URL"), os.Getenv("VOICEAI_JUDGE_EVAL_MODEL"); base != "" && model != "" {
		client, err := llm.New(llm.Config{BaseURL: base, APIKey: os.Getenv("VOICEAI_JUDGE_EVAL_API_KEY"), Model: model, Timeout: timeout})
		if err != nil {
			return err
		}
		// A remote judge's time is the network's and its memory the
		// server's: only the quality goals apply.
		remote := judgeeval.Bar
		remote.P95, remote.Memory = 0, 0
		judges = append(judges, judge{model: runner.OpenAI{Client: client}, goals: remote, parallel: max(parallel, 1)})
	} else {
		fmt.Println("judge eval: set VOICEAI_JUDGE_EVAL_BASE_URL and VOICEAI_JUDGE_EVAL_MODEL to measure an OpenAI-compatible judge too")
	}
	for _, set := range []string{judgeeval.Labelled, judgeeval.Heldout, judgeeval.Heldout2, judgeeval.Heldout3} {
		cases, err := judgeeval.Set(set)
		if err != nil {
			return err
		}
		for _, j := range judges {
			r, err := judgeeval.Run(ctx, j.model, set, cases, judgeeval.Options{Parallel: j.parallel})
			if err != nil {
				return err
			}
			r.Write(os.Stdout, j.goals)
			if list {
				r.WriteDisagreements(os.Stdout)
			}
		}
	}
	return nil
}
