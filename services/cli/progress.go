package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports finished runs while tests run --wait polls: a bar on a
// terminal, else one plain line per change (CI logs keep no carriage
// returns).
type progress struct {
	w     io.Writer
	id    string
	total int
	bar   *progressbar.ProgressBar // nil: plain lines
	last  int
}

func newProgress(w io.Writer, id string, total int) *progress {
	p := &progress{w: w, id: id, total: total, last: -1}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(id),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionSetWidth(30),
		)
	}
	return p
}

func (p *progress) update(passed, failed int) {
	done := passed + failed
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s: %d passed, %d failed", p.id, passed, failed))
		_ = p.bar.Set(done)
		return
	}
	if done == p.last {
		return
	}
	p.last = done
	fmt.Fprintf(p.w, "%s: %d/%d runs finished (%d passed, %d failed)\n", p.id, done, p.total, passed, failed)
}

// done leaves the bar as it stands and ends its line, so what follows
// starts on a fresh one.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}
