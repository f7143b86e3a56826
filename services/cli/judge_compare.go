package cli

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// The judge commands about conversations and about comparing judges:
// re-judge a recorded conversation (its analysis is stored), label its
// evaluation, judge a labelled set again with another model.

// criterionLabels reads repeated --criterion id=right|wrong flags.
func criterionLabels(flags []string, example string) ([]map[string]any, error) {
	var out []map[string]any
	for _, c := range flags {
		id, v, ok := strings.Cut(c, "=")
		if !ok || id == "" || (v != "right" && v != "wrong") {
			return nil, fmt.Errorf("--criterion %q: write it as %s=right or %s=wrong", c, example, example)
		}
		out = append(out, map[string]any{"id": id, "correct": v == "right"})
	}
	return out, nil
}

func (a *app) judgeAnalyseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "analyse <conversation_id>",
		Short: "Judge a recorded conversation's evaluation criteria again; the analysis is stored and shown on the conversation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var an struct {
				AnalysisID string                    `json:"analysis_id"`
				Stored     bool                      `json:"stored"`
				Error      string                    `json:"error"`
				Analysis   wire.ConversationAnalysis `json:"analysis"`
				Usage      struct {
					Model string `json:"model"`
				} `json:"model_usage"`
			}
			if show, err := a.fetch(cmd.Context(), analyseConversationRoute, args, nil, nil, &an); !show {
				return err
			}
			if !an.Stored {
				fmt.Fprintf(a.stdout, "The judge (%s) stopped early: %s. Nothing was stored.\n", oneLine(an.Usage.Model), oneLine(an.Error))
				return nil
			}
			fmt.Fprintf(a.stdout, "%s judged by %s: %s (analysis %s)\n", args[0], oneLine(an.Usage.Model), strings.ToUpper(an.Analysis.CallSuccessful), an.AnalysisID)
			var rows [][]string
			for _, c := range an.Analysis.EvaluationCriteriaResultsList {
				rows = append(rows, []string{c.ID, strings.ToUpper(c.Result), clip(c.Rationale, 70)})
			}
			table(a.stdout, []string{"CRITERION", "RESULT", "RATIONALE"}, rows)
			return nil
		},
	}
}

func (a *app) judgeLabelConversationCommand() *cobra.Command {
	return a.labelCommand(labelKind{
		use:           "label-conversation <conversation_id> (--right | --wrong) [--note TEXT] [--criterion <criterion_id>=wrong ...]",
		short:         "Label a conversation's analysis right or wrong (the analysis is not changed)",
		ids:           1,
		route:         labelConversationRoute,
		verdict:       "the analysis' verdict",
		criterion:     "<criterion_id>",
		criterionHelp: "one criterion's verdict",
		namesJudge:    true,
	})
}

func (a *app) judgeRejudgeCommand() *cobra.Command {
	var model, invocation, test string
	var since int64
	var limit int
	cmd := &cobra.Command{
		Use:   "rejudge --judge-model MODEL [--invocation ID] [--test ID] [--since UNIX] [--limit N]",
		Short: "Judge labelled runs again with another judge model, to compare judges on the same labels (no run's verdict changes)",
		Long: `Judges the labelled runs the flags select (each run's current label, the most
recently labelled first) again with MODEL, and records its votes. No run's verdict
changes. Then compare: voiceai judge report --compare <the runs' judge>,MODEL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if model == "" {
				return errors.New("name the judge to ask: --judge-model (offline-v2 or offline-v1, or the platform's judge model)")
			}
			filter := map[string]any{}
			if invocation != "" {
				filter["invocation_id"] = invocation
			}
			if test != "" {
				filter["test_id"] = test
			}
			if since > 0 {
				filter["since_unix"] = since
			}
			body := map[string]any{"judge_model": model, "filter": filter, "limit": limit}
			var res struct {
				RejudgeID string `json:"rejudge_id"`
				Runs      int    `json:"runs"`
				Votes     []struct {
					InvocationID string `json:"invocation_id"`
					RunID        string `json:"run_id"`
					TestName     string `json:"test_name"`
					Result       string `json:"result"`
					Rationale    string `json:"rationale"`
					Error        string `json:"error"`
				} `json:"votes"`
			}
			if show, err := a.fetch(cmd.Context(), rejudgeRoute, nil, nil, body, &res); !show {
				return err
			}
			fmt.Fprintf(a.stdout, "%s judged %d labelled run(s) again (%s); no run's verdict changed.\n", model, res.Runs, res.RejudgeID)
			var rows [][]string
			for _, v := range res.Votes {
				said := v.Rationale
				if v.Error != "" {
					said = v.Error
				}
				rows = append(rows, []string{v.InvocationID, v.RunID, clip(v.TestName, 30), strings.ToUpper(v.Result), clip(said, 60)})
			}
			table(a.stdout, []string{"INVOCATION", "RUN", "TEST", "VOTE", "JUDGE SAID"}, rows)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "judge-model", "", "the judge model to ask")
	f.StringVar(&invocation, "invocation", "", "only runs of this invocation")
	f.StringVar(&test, "test", "", "only runs of this test")
	f.Int64Var(&since, "since", 0, "only runs labelled since (Unix seconds)")
	f.IntVar(&limit, "limit", 50, "runs to judge at most (1-200)")
	return cmd
}

// printComparison prints the judges compared on the same labels.
func (a *app) printComparison(c *wire.Comparison) {
	fmt.Fprintf(a.stdout, "Compared on the same %d labelled run(s) (%s):\n", c.Runs, oneLine(strings.Join(c.Models, ", ")))
	var rows [][]string
	for _, j := range c.Judges {
		row := append([]string{j.JudgeModel}, agreementCells(j.AgreementFigures)...)
		rows = append(rows, append(row, strconv.FormatInt(j.Judged, 10)))
	}
	table(a.stdout, []string{"JUDGE", "LABELS", "AGREEMENT (95%)", "KAPPA", "TRUE PASS", "TRUE FAIL", "FALSE PASS", "JUDGED"}, rows)
}

// compareQuery adds --compare to a report's query.
func compareQuery(q url.Values, compare string) {
	if compare != "" {
		q.Set("compare", compare)
	}
}
