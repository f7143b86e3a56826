package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// listing is a "list" command over a cursor-paged API listing: its
// filters become query parameters, each item of the page a table row,
// and a further page is hinted with its cursor.
type listing[T any] struct {
	short    string
	route    route
	items    string // the page's field that holds the items, e.g. "agents"
	noun     string // what it lists, for the help: "agents"
	pageSize int    // the default page size
	filters  []filter
	header   []string
	row      func(T) []string
}

// listCommand makes the command of l. (A method of app cannot take a
// type parameter.)
func listCommand[T any](a *app, l listing[T]) *cobra.Command {
	var cursor string
	var pageSize int
	cmd := &cobra.Command{
		Use:   "list [filters]",
		Short: l.short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"page_size": {strconv.Itoa(pageSize)}}
			for _, f := range l.filters {
				f.set(q)
			}
			setIf(q, "cursor", cursor)
			var page map[string]json.RawMessage
			if show, err := a.fetch(cmd.Context(), l.route, nil, q, nil, &page); !show {
				return err
			}
			items, hasMore, next, err := decodePage[T](page, l.items)
			if err != nil {
				return err
			}
			rows := make([][]string, len(items))
			for i, it := range items {
				rows[i] = l.row(it)
			}
			table(a.stdout, l.header, rows)
			a.moreHint(hasMore, next)
			return nil
		},
	}
	for _, f := range l.filters {
		f.add(cmd)
	}
	cmd.Flags().IntVar(&pageSize, "page-size", l.pageSize, l.noun+" per page (1-100)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "page cursor from a previous listing")
	return cmd
}

// A filter is a flag of a listing that narrows it by query parameters.
type filter interface {
	add(cmd *cobra.Command)
	set(q url.Values)
}

// text filters by the flag's value as it is, when one is given.
func text(flag, param, usage string) filter {
	return &textFilter{flag: flag, param: param, usage: usage}
}

type textFilter struct {
	flag, param, usage, v string
	aliases               map[string]string // a value the CLI accepts -> the one sent
}

func (f *textFilter) add(cmd *cobra.Command) { cmd.Flags().StringVar(&f.v, f.flag, "", f.usage) }
func (f *textFilter) set(q url.Values) {
	v := f.v
	if a, ok := f.aliases[v]; ok {
		v = a
	}
	setIf(q, f.param, v)
}

// aliased is f accepting also each key of aliases, sent as its value.
func aliased(f filter, aliases map[string]string) filter {
	f.(*textFilter).aliases = aliases
	return f
}

// anyOf filters by every value the flag is given (repeatable).
func anyOf(flag, param, usage string) filter {
	return &anyOfFilter{flag: flag, param: param, usage: usage}
}

type anyOfFilter struct {
	flag, param, usage string
	v                  []string
}

func (f *anyOfFilter) add(cmd *cobra.Command) { cmd.Flags().StringSliceVar(&f.v, f.flag, nil, f.usage) }
func (f *anyOfFilter) set(q url.Values) {
	if len(f.v) > 0 {
		q[f.param] = f.v
	}
}

// ago filters by a time the flag gives as a duration before now (24h),
// sent as Unix seconds.
func ago(flag, param, usage string) filter { return &agoFilter{flag: flag, param: param, usage: usage} }

type agoFilter struct {
	flag, param, usage string
	v                  time.Duration
}

func (f *agoFilter) add(cmd *cobra.Command) { cmd.Flags().DurationVar(&f.v, f.flag, 0, f.usage) }
func (f *agoFilter) set(q url.Values) {
	if f.v > 0 {
		q.Set(f.param, strconv.FormatInt(time.Now().Add(-f.v).Unix(), 10))
	}
}

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// callCommand is a command whose arguments are r's path ids: it calls r
// and prints its answer with print (with --json, as it came).
func callCommand[T any](a *app, use, short string, r route, print func(T)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(len(pathVar.FindAllString(r.Path, -1))),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out T
			if show, err := a.fetch(cmd.Context(), r, args, nil, nil, &out); !show {
				return err
			}
			print(out)
			return nil
		},
	}
}

// decodePage reads one page of a cursor-paged listing: its items (under
// the listing's own field), whether more follow, and the next cursor.
func decodePage[T any](page map[string]json.RawMessage, field string) (items []T, hasMore bool, next *string, err error) {
	for name, into := range map[string]any{field: &items, "has_more": &hasMore, "next_cursor": &next} {
		if raw, ok := page[name]; ok {
			if err := json.Unmarshal(raw, into); err != nil {
				return nil, false, nil, fmt.Errorf("unexpected answer: %s: %w", name, err)
			}
		}
	}
	return items, hasMore, next, nil
}
