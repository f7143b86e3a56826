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
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], kv[i+1])
	}
	tw.Flush()
}

// oneLine keeps a cell on its line: tabs and line breaks would break the
// table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
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
