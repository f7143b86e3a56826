package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/dirlock"
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
		Short: "Run only the embedded MongoDB-compatible store (FerretDB) in VOICEAI_DATA_DIR/mongo, on VOICEAI_STORE_ADDR (default 127.0.0.1 on a free port); prints its URI",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := os.Getenv("VOICEAI_DATA_DIR")
			if dir == "" {
				dir = "./data"
			}
			addr := os.Getenv("VOICEAI_STORE_ADDR")
			if addr == "" {
				addr = "127.0.0.1:0"
			}
			if err := config.CheckListenAddr("VOICEAI_STORE_ADDR", addr, false); err != nil {
				return err
			}
			// The platform on this data directory runs this store itself.
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			release, err := dirlock.Acquire(dir)
			if err != nil {
				return err
			}
			defer release()
			return serveStore(cmd.Context(), filepath.Join(dir, "mongo"), addr)
		},
	}
}

func serveStore(ctx context.Context, dir, addr string) error {
	log := obs.NewLogger(os.Stderr, 0, "store")
	log.Info("store starting", "dir", dir, "addr", addr)
	if host, _, _ := net.SplitHostPort(addr); !loopback(host) {
		log.Warn("the store takes any client, without credentials, and holds every workspace's data: listen on a loopback address, or run MongoDB with authentication where other machines need it", "addr", addr)
	}
	return docstore.ServeAt(ctx, dir, addr, os.Stdout)
}

// loopback reports whether host (of VOICEAI_STORE_ADDR) is reachable from
// this machine only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
