package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/embedded/docstore"
	"github.com/voiceai-platform/voiceai/pkg/obs"
)

// storeCommand runs only the embedded store (FerretDB on SQLite files)
// for services run as separate processes on one machine without a
// MongoDB: they reach it at the URI it prints (VOICEAI_MONGO_URI). It is
// what the multi-process and cluster tests use as their external store.
func storeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "store",
		Short: "Run only the embedded MongoDB-compatible store (FerretDB) in VOICEAI_DATA_DIR/mongo; prints its URI",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := os.Getenv("VOICEAI_DATA_DIR")
			if dir == "" {
				dir = "./data"
			}
			return serveStore(cmd.Context(), filepath.Join(dir, "mongo"))
		},
	}
}

func serveStore(ctx context.Context, dir string) error {
	obs.NewLogger(os.Stderr, 0, "store").Info("store starting", "dir", dir)
	return docstore.Serve(ctx, dir, os.Stdout)
}
