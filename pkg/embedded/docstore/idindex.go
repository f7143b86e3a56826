package docstore

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the SQLite driver FerretDB itself uses

	"github.com/voiceai-platform/voiceai/pkg/tick"
)

// FerretDB 1.24's SQLite backend finds a document by _id with
// `_ferretdb_sjson->'$._id' = ?`, but indexes `_ferretdb_sjson->"_id"`:
// SQLite cannot use that index for the lookup, so every lookup by id
// (every read-model upsert) scans and parses the whole collection, and
// writing N documents one by one costs O(N²). Until FerretDB matches the
// two, the embedded store adds an index on the expression its lookups
// use to every collection table, when the table appears.

// idPathIndexInterval is how often new tables are looked for.
const idPathIndexInterval = 2 * time.Second

// idPathIndexSuffix names the added index: <table>__id_path.
const idPathIndexSuffix = "__id_path"

// keepIDPathsIndexed indexes the tables of every database in dir now and
// then every interval, until ctx ends.
func keepIDPathsIndexed(ctx context.Context, dir string, log *slog.Logger) {
	index := func() {
		if err := indexIDPaths(ctx, dir); err != nil && ctx.Err() == nil {
			log.Warn("embedded store: indexing _id lookups", "err", err)
		}
	}
	index()
	tick.Every(ctx, idPathIndexInterval, index)
}

// indexIDPaths adds the _id lookup index to every collection table of the
// SQLite databases in dir that lacks it.
func indexIDPaths(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := indexIDPathsOf(ctx, f); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
	}
	return nil
}

func indexIDPathsOf(ctx context.Context, file string) error {
	if _, err := os.Stat(file); err != nil {
		return nil // dropped meanwhile
	}
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT t.name FROM sqlite_master t WHERE t.type = 'table'
		AND t.name NOT LIKE '\_ferretdb\_%' ESCAPE '\' AND t.name NOT LIKE 'sqlite\_%' ESCAPE '\'
		AND NOT EXISTS (SELECT 1 FROM sqlite_master i WHERE i.type = 'index' AND i.name = t.name || ?)`, idPathIndexSuffix)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, table := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (_ferretdb_sjson->'$._id')`,
			quoteIdent(table+idPathIndexSuffix), quoteIdent(table))
		if _, err := db.ExecContext(ctx, q); err != nil && !strings.Contains(err.Error(), "no such table") {
			return err
		}
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
