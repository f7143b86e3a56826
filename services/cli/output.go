package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rivo/uniseg"
)

// table prints rows under a header, columns aligned by the cells they
// take on a terminal (uniseg's width: an emoji or a CJK character takes
// two, a combining mark none), where text/tabwriter counts runes.
func table(w io.Writer, header []string, rows [][]string) {
	lines := make([][]string, 0, len(rows)+1)
	lines = append(lines, header)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = oneLine(c)
		}
		lines = append(lines, cells)
	}
	var widths []int
	for _, cells := range lines {
		for i, c := range cells {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], uniseg.StringWidth(c))
		}
	}
	var b strings.Builder
	for _, cells := range lines {
		b.Reset()
		for i, c := range cells {
			b.WriteString(c)
			if i < len(cells)-1 { // the last cell is not padded
				b.WriteString(strings.Repeat(" ", widths[i]-uniseg.StringWidth(c)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// fields prints name: value lines, aligned, for one resource.
func fields(w io.Writer, kv ...string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], indented(printable(kv[i+1])))
	}
	tw.Flush()
}

// oneLine keeps a cell on its line: tabs and line breaks would break the
// table. Other control characters are shown escaped (printable).
func oneLine(s string) string {
	return printable(strings.Join(strings.Fields(s), " "))
}

// printable shows the control characters of text the server sent (C0,
// DEL, C1: ESC among them; the bidirectional overrides) escaped, as \x1b,
// \u009b or \u202e, so a name cannot
// clear the screen or retitle the terminal. Line breaks and tabs are kept.
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// indented keeps the lines of a multi-line text the server sent under the
// line that begins it: each further line is indented, so the text can
// never print a line of its own that reads as the CLI's (a forged "PASSED"
// in an endpoint's error, say).
func indented(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\n    ")
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || isBidiControl(r)
}

// isBidiControl reports the embeddings, overrides and isolates of
// Unicode's bidirectional algorithm: one in a name would reorder the rest
// of the line it is printed on (a reason shown backwards). Right-to-left
// text itself needs none of them, and is printed as it is.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// clip shortens s to n characters for a table cell.
func clip(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func unixTime(secs int64) string {
	if secs == 0 {
		return "-"
	}
	return time.Unix(secs, 0).UTC().Format("2006-01-02 15:04Z")
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
