package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// table prints rows under a header, columns aligned.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		for i, c := range r {
			r[i] = oneLine(c)
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
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
// DEL, C1: ESC among them) escaped, as \x1b or \u009b, so a name cannot
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
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
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
