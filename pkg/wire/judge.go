package wire

import "fmt"

// JudgeReport is how far each judge model agrees with people's labels
// (schema JudgeReport): a row per judge model on everything it judged,
// on each test and on each agent's conversations, and with compare, the
// models named judged on the same labelled runs.
type JudgeReport struct {
	Labels  int64          `json:"labels"` // current labels the report counts
	Judges  []JudgeFigures `json:"judges"`
	Compare *Comparison    `json:"compare,omitempty"`
}

// JudgeFigures is one row of the judge report (schema JudgeFigures). A
// row's TestID and TestName are null on a judge's row of all its tests
// and on an agent's conversations (AgentID then names the agent).
type JudgeFigures struct {
	JudgeProvider   string  `json:"judge_provider"`
	JudgeModel      string  `json:"judge_model"`
	TestID          *string `json:"test_id"`
	TestName        *string `json:"test_name"`
	Scope           string  `json:"scope"` // all, test, conversations
	AgentID         *string `json:"agent_id"`
	UnknownVerdicts int64   `json:"unknown_verdicts"` // labels of verdicts left unknown: in no figure
	AgreementFigures
	FlipRate JudgeRate          `json:"flip_rate"`
	FlipRuns int64              `json:"flip_runs"`
	Criteria []CriterionFigures `json:"criteria"`
	Series   []DayFigures       `json:"series"`
}

// AgreementFigures are a judge's verdicts against the truth people's
// labels give, on a row of the report and on each judge compared.
type AgreementFigures struct {
	Labels        int64     `json:"labels"`
	Confusion     Confusion `json:"confusion"`
	Agreement     JudgeRate `json:"agreement"`
	CohensKappa   *float64  `json:"cohens_kappa"` // null when undefined
	TruePassRate  JudgeRate `json:"true_pass_rate"`
	TrueFailRate  JudgeRate `json:"true_fail_rate"`
	FalsePassRate JudgeRate `json:"false_pass_rate"`
}

// Confusion counts a judge's passes and fails against the truth.
type Confusion struct {
	TruePass  int64 `json:"true_pass"`
	FalsePass int64 `json:"false_pass"` // the judge passed what should fail
	FalseFail int64 `json:"false_fail"`
	TrueFail  int64 `json:"true_fail"`
}

// JudgeRate is a share with its 95% interval (schema Rate): Count of N,
// Value and CI95 null while N is 0.
type JudgeRate struct {
	Value *float64  `json:"value"`
	CI95  []float64 `json:"ci95"`
	Count int64     `json:"count"`
	N     int64     `json:"n"`
}

// String is the share with its interval, "0.83 (0.70–0.91)", or "-"
// without one.
func (r JudgeRate) String() string {
	switch {
	case r.Value == nil:
		return "-"
	case len(r.CI95) == 2:
		return fmt.Sprintf("%.2f (%.2f–%.2f)", *r.Value, r.CI95[0], r.CI95[1])
	}
	return fmt.Sprintf("%.2f", *r.Value)
}

// CriterionFigures are one criterion's labels on a row: the share people
// marked right and, where the labels name the criterion's own verdict (a
// conversation's evaluation criteria), its Cohen's kappa; null on a
// test's success conditions, whose labels say right or wrong only.
type CriterionFigures struct {
	ID          string    `json:"id"`
	Text        string    `json:"text"`
	Labels      int64     `json:"labels"`
	Agreement   JudgeRate `json:"agreement"`
	CohensKappa *float64  `json:"cohens_kappa"`
}

// DayFigures are a judge's labels of one day, for its agreement over
// time; Agreement and CohensKappa are null where undefined.
type DayFigures struct {
	Date        string   `json:"date"` // YYYY-MM-DD
	Labels      int64    `json:"labels"`
	Agreement   *float64 `json:"agreement"`
	CohensKappa *float64 `json:"cohens_kappa"`
}

// Comparison is the judge models compared on the labelled runs every one
// of them gave a pass or a fail.
type Comparison struct {
	Models []string        `json:"models"`
	Runs   int64           `json:"runs"` // labelled runs every model judged
	Judges []ComparedJudge `json:"judges"`
}

// ComparedJudge is one model's figures over the runs compared; Judged
// counts the labelled runs it gave a pass or a fail, compared or not.
type ComparedJudge struct {
	JudgeModel string `json:"judge_model"`
	Judged     int64  `json:"judged"`
	AgreementFigures
}
