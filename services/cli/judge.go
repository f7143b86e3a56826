package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// errJudgeUncalibrated ends tests run --wait with ExitUngated: a test's
// judge agrees with people's labels less than --min-judge-agreement asks
// (or has too few labels to say), so the run's verdicts do not gate CI.
var errJudgeUncalibrated = errors.New("the judge of some test is below the agreement asked for")

// agreementCells are the figures under the columns LABELS, AGREEMENT
// (95%), KAPPA, TRUE PASS, TRUE FAIL and FALSE PASS.
func agreementCells(f wire.AgreementFigures) []string {
	kappa := "-"
	if f.CohensKappa != nil {
		kappa = fmt.Sprintf("%.2f", *f.CohensKappa)
	}
	return []string{strconv.FormatInt(f.Labels, 10), f.Agreement.String(), kappa, f.TruePassRate.String(), f.TrueFailRate.String(), f.FalsePassRate.String()}
}

func (a *app) judgeReportCommand() *cobra.Command {
	var model, test, compare string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "How far each judge model agrees with people's labels, on every test and on each",
		Long: `Prints, for each judge model (on all its tests, then on each test): the labels,
the agreement with them and Cohen's kappa, the true-pass and true-fail rates, the
false-pass rate (of the judge's passes, the share people said should fail), each
with its 95% interval, and the flip rate between repeated verdicts of one transcript.
Labels of conversations' evaluations count too, on a row per agent. --compare a,b
compares judge models on the same labelled runs (after voiceai judge rejudge).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if model != "" {
				q.Set("judge_model", model)
			}
			if test != "" {
				q.Set("test_id", test)
			}
			compareQuery(q, compare)
			var rep wire.JudgeReport
			if show, err := a.fetch(cmd.Context(), judgeReportRoute, nil, q, nil, &rep); !show {
				return err
			}
			if len(rep.Judges) == 0 {
				fmt.Fprintln(a.stdout, "No labels yet: label runs with `voiceai judge label` or in the console's review page.")
				return nil
			}
			var rows [][]string
			for _, j := range rep.Judges {
				scope := "(all tests)"
				if j.AgentID != nil {
					scope = "conversations of " + *j.AgentID
				}
				if j.TestID != nil {
					scope = *j.TestID
					if j.TestName != nil {
						scope += " " + clip(*j.TestName, 30)
					}
				}
				row := append([]string{j.JudgeProvider + "/" + j.JudgeModel, scope}, agreementCells(j.AgreementFigures)...)
				rows = append(rows, append(row, j.FlipRate.String()))
			}
			table(a.stdout, []string{"JUDGE", "TEST", "LABELS", "AGREEMENT (95%)", "KAPPA", "TRUE PASS", "TRUE FAIL", "FALSE PASS", "FLIPS"}, rows)
			if rep.Compare != nil {
				fmt.Fprintln(a.stdout)
				a.printComparison(rep.Compare)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "judge-model", "", "only this judge model")
	cmd.Flags().StringVar(&test, "test", "", "only this test id")
	cmd.Flags().StringVar(&compare, "compare", "", "judge models to compare on the same labels, comma-separated (e.g. gpt-4o,offline-v2)")
	return cmd
}

func (a *app) judgeQueueCommand() *cobra.Command {
	var agent, cursor string
	var size, sample int
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Runs to review: failed, judge votes that disagreed, a sample of passes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"page_size": {strconv.Itoa(size)}, "sample_per_mille": {strconv.Itoa(sample)}}
			if agent != "" {
				q.Set("agent_id", agent)
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var page struct {
				Runs       []wire.ReviewItem `json:"runs"`
				HasMore    bool              `json:"has_more"`
				NextCursor *string           `json:"next_cursor"`
			}
			if show, err := a.fetch(cmd.Context(), reviewQueueRoute, nil, q, nil, &page); !show {
				return err
			}
			var rows [][]string
			for _, r := range page.Runs {
				rows = append(rows, []string{r.InvocationID, r.RunID, strings.ToUpper(r.Status), strings.Join(r.Reasons, ","), clip(r.TestName, 30),
					clip(r.ConditionResult.Rationale.Summary, 60)})
			}
			table(a.stdout, []string{"INVOCATION", "RUN", "STATUS", "WHY", "TEST", "JUDGE SAID"}, rows)
			a.moreHint(page.HasMore, page.NextCursor)
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the page after the one that named this cursor (same --agent and --sample-per-mille)")
	cmd.Flags().IntVar(&size, "page-size", 30, "runs to list (1-100)")
	cmd.Flags().IntVar(&sample, "sample-per-mille", 100, "passed runs drawn for review, per thousand (0-1000)")
	return cmd
}

func (a *app) judgeLabelCommand() *cobra.Command {
	return a.labelCommand(labelKind{
		use:           "label <invocation_id> <run_id> (--right | --wrong) [--note TEXT] [--criterion condition_0=wrong ...]",
		short:         "Label a run's verdict right or wrong (the run's own result is not changed)",
		ids:           2,
		route:         labelRunRoute,
		verdict:       "the judge's verdict",
		criterion:     "condition_<i>",
		criterionHelp: "one success condition's verdict",
	})
}

// labelKind is what differs between labelling a run's verdict and a
// conversation's analysis: the rest of the command is the same.
type labelKind struct {
	use, short    string
	ids           int   // the path's ids; the last names what is labelled
	route         route // the labels route
	verdict       string
	criterion     string // how a criterion id is written, for the help
	criterionHelp string
	namesJudge    bool // the answer names the judge model reviewed
}

func (a *app) labelCommand(k labelKind) *cobra.Command {
	var right, wrong bool
	var note string
	var criteria []string
	cmd := &cobra.Command{
		Use:   k.use,
		Short: k.short,
		Args:  cobra.ExactArgs(k.ids),
		RunE: func(cmd *cobra.Command, args []string) error {
			if right == wrong {
				return errors.New("say whether the judge was right: --right or --wrong")
			}
			body := map[string]any{"verdict_correct": right, "note": note}
			cs, err := criterionLabels(criteria, k.criterion)
			if err != nil {
				return err
			}
			if cs != nil {
				body["criteria"] = cs
			}
			var l struct {
				LabelID    string  `json:"label_id"`
				Overturned bool    `json:"overturned"`
				Corrected  *string `json:"corrected_result"`
				Reviewed   struct {
					JudgeModel string `json:"judge_model"`
				} `json:"reviewed"`
			}
			if show, err := a.fetch(cmd.Context(), k.route, args, nil, body, &l); !show {
				return err
			}
			judge := "the judge"
			if k.namesJudge {
				judge += " (" + l.Reviewed.JudgeModel + ")"
			}
			labelled := args[len(args)-1]
			switch {
			case l.Overturned && l.Corrected != nil:
				fmt.Fprintf(a.stdout, "Labelled %s: %s was wrong, the right result is %s (label %s).\n", labelled, judge, oneLine(*l.Corrected), l.LabelID)
			case l.Overturned:
				fmt.Fprintf(a.stdout, "Labelled %s: %s was wrong (label %s).\n", labelled, judge, l.LabelID)
			default:
				fmt.Fprintf(a.stdout, "Labelled %s: %s was right (label %s).\n", labelled, judge, l.LabelID)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&right, "right", false, k.verdict+" was right")
	f.BoolVar(&wrong, "wrong", false, k.verdict+" was wrong")
	f.StringVar(&note, "note", "", "why")
	f.StringArrayVar(&criteria, "criterion", nil, k.criterionHelp+": "+k.criterion+"=right|wrong (repeatable)")
	return cmd
}

// judgeGate is what --min-judge-agreement asks of the judges of an
// invocation's tests.
type judgeGate struct {
	minAgreement float64
	minLabels    int
}

// check reads the judge report and names each test of inv whose judge
// (the model that judged its runs) is below the gate: too few labels, or
// an agreement under the minimum.
func (g judgeGate) check(ctx context.Context, c *client, inv invocation) ([]string, error) {
	type key struct{ model, test string }
	seen := map[key]string{}
	var order []key
	for _, r := range inv.TestRuns {
		if r.Status != "passed" && r.Status != "failed" || r.TestInfo.Type == "tool" { // a tool test's calls are checked, not judged
			continue
		}
		k := key{r.ModelUsage.Model, r.TestID}
		if _, ok := seen[k]; !ok {
			seen[k] = r.TestName
			order = append(order, k)
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	var rep wire.JudgeReport
	if _, err := c.call(ctx, judgeReportRoute, nil, nil, nil, &rep); err != nil {
		return nil, fmt.Errorf("reading the judge report for --min-judge-agreement: %w", err)
	}
	rows := map[key]wire.JudgeFigures{}
	for _, j := range rep.Judges {
		if j.TestID != nil {
			rows[key{j.JudgeModel, *j.TestID}] = j
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].test < order[j].test })
	var below []string
	for _, k := range order {
		j, ok := rows[k]
		name := fmt.Sprintf("%s (%s), judge %s", k.test, seen[k], k.model)
		switch {
		case !ok || j.Agreement.N == 0:
			below = append(below, name+": no labels")
		case j.Agreement.N < int64(g.minLabels):
			below = append(below, fmt.Sprintf("%s: %d label(s), fewer than the %d needed (agreement %s)", name, j.Agreement.N, g.minLabels, j.Agreement))
		case *j.Agreement.Value < g.minAgreement:
			below = append(below, fmt.Sprintf("%s: agreement %s over %d label(s), below %.2f", name, j.Agreement, j.Agreement.N, g.minAgreement))
		}
	}
	return below, nil
}
