package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// DefaultNATSURL is where `make run` serves its embedded NATS.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// tailStreams are the event streams events tail follows by default: the
// domain events and the public platform events. IDENTITY (key hashes,
// member e-mail addresses) is left out unless asked for by name.
var tailStreams = []string{events.PlatformStream, events.AgentsStream, events.TicketsStream, events.TestingStream, events.WebhooksStream}

// tailedEvent is one event as events tail --json prints it.
type tailedEvent struct {
	Stream      string          `json:"stream"`
	Seq         uint64          `json:"seq"`
	Subject     string          `json:"subject"`
	Type        string          `json:"type"`
	EventID     string          `json:"event_id,omitempty"`
	WorkspaceID string          `json:"workspace_id,omitempty"`
	StoredAt    string          `json:"stored_at"`
	Data        json.RawMessage `json:"data"`
}

func (a *app) eventsTailCommand() *cobra.Command {
	var natsURL, workspace string
	var streams []string
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "tail [--stream NAME ...] [--workspace ID] [--since 10m] [--json]",
		Short: "Print events as they are stored, decoded (one JSON object a line with --json)",
		Long: `events tail follows the platform's JetStream streams and prints each event as it is
stored, decoded from protobuf: the type, subject and ids, or with --json one object a
line: {"stream","seq","subject","type","event_id","workspace_id","stored_at","data"},
data being the event in protobuf JSON (proto field names) or, on PLATFORM, the event's
JSON envelope. It needs the NATS address, not an API key: --nats-url, else
VOICEAI_NATS_URL, else the one make run wrote to its data directory
($VOICEAI_DATA_DIR/nats.url, ./data/nats.url by default), else ` + DefaultNATSURL + `.
Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range streams {
				if !slices.ContainsFunc(events.Streams(), func(x events.StreamSpec) bool { return x.Name == s }) {
					return fmt.Errorf("unknown stream %q", s)
				}
			}
			if workspace != "" {
				if err := events.ValidateToken(workspace); err != nil {
					return fmt.Errorf("--workspace: %w", err)
				}
			}
			url, from := natsAddress(natsURL)
			// The platform going away is said once, and its coming back;
			// the client reconnects for as long as tail runs.
			nc, err := nats.Connect(url, nats.Name("voiceai events tail"), nats.MaxReconnects(-1),
				nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
					if c.IsClosed() || cmd.Context().Err() != nil {
						return // tail ending closed it: nothing was lost
					}
					why := ""
					if err != nil {
						why = " (" + err.Error() + ")"
					}
					fmt.Fprintf(a.stderr, "lost the connection to NATS at %s%s; reconnecting\n", config.Redacted(url), why)
				}),
				nats.ReconnectHandler(func(*nats.Conn) {
					fmt.Fprintf(a.stderr, "reconnected to NATS at %s\n", config.Redacted(url))
				}))
			if err != nil {
				return fmt.Errorf("connect to NATS at %s (%s): %w; is the platform running? make run writes its NATS address to "+
					"data/nats.url; elsewhere pass --nats-url or set VOICEAI_NATS_URL", config.Redacted(url), from, err)
			}
			defer nc.Close()
			return a.tail(cmd.Context(), nc, streams, workspace, since)
		},
	}
	f := cmd.Flags()
	f.StringVar(&natsURL, "nats-url", "", "NATS address (env VOICEAI_NATS_URL, else make run's data/nats.url, else "+DefaultNATSURL+")")
	f.StringSliceVar(&streams, "stream", tailStreams, "stream to follow (repeatable)")
	f.StringVar(&workspace, "workspace", "", "only this workspace's events")
	f.DurationVar(&since, "since", 0, "start this long ago instead of now, e.g. 10m")
	return cmd
}

// natsAddress is the NATS address to use and where it came from: the
// flag, the environment, the file make run writes to its data directory
// (its embedded NATS may listen on a random port), or the default.
func natsAddress(flag string) (url, from string) {
	if flag != "" {
		return flag, "--nats-url"
	}
	if env := os.Getenv("VOICEAI_NATS_URL"); env != "" {
		return env, "VOICEAI_NATS_URL"
	}
	dir := firstNonEmpty(os.Getenv("VOICEAI_DATA_DIR"), "data")
	if b, err := os.ReadFile(filepath.Join(dir, "nats.url")); err == nil {
		if u := strings.TrimSpace(string(b)); u != "" {
			return u, filepath.Join(dir, "nats.url")
		}
	}
	return DefaultNATSURL, "the default"
}

// tail follows each stream (eventstore.FollowFrom: an ordered consumer,
// no state on the server) and prints events until ctx ends.
func (a *app) tail(ctx context.Context, nc *nats.Conn, streams []string, workspace string, since time.Duration) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()     // stops every follower
	var from time.Time // zero: from now on
	if since > 0 {
		from = time.Now().Add(-since)
	}
	var mu sync.Mutex // one line at a time
	followed := 0
	for _, name := range streams {
		if _, err := js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
			fmt.Fprintf(a.stderr, "stream %s does not exist (yet); not followed\n", name)
			continue
		} else if err != nil {
			return fmt.Errorf("follow %s: %w", name, err)
		}
		_, err := eventstore.FollowFrom(ctx, js, name, nil, from, func(rec eventstore.Record) {
			ev, ok := decodeTailed(name, rec)
			if !ok {
				return
			}
			if workspace != "" && ev.WorkspaceID != workspace {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			a.printTailed(ev)
		})
		if err != nil {
			return fmt.Errorf("follow %s: %w", name, err)
		}
		followed++
	}
	if followed == 0 {
		return errors.New("no stream to follow")
	}
	<-ctx.Done()
	return nil
}

// decodeTailed turns a stored record into what tail prints: its
// protobuf decoded by the type header, or a PLATFORM event's envelope.
// A record with no type outside PLATFORM is not an event (TESTRUNS'
// queued totals and completion claims): ok is false, and tail skips it.
func decodeTailed(stream string, rec eventstore.Record) (ev tailedEvent, ok bool) {
	if rec.Type == "" && stream != events.PlatformStream {
		return tailedEvent{}, false
	}
	ev = tailedEvent{
		Stream: stream, Seq: rec.Seq, Subject: rec.Subject, Type: rec.Type, EventID: rec.EventID, WorkspaceID: rec.Workspace,
		StoredAt: rec.Time.UTC().Format(time.RFC3339Nano),
	}
	if stream == events.PlatformStream {
		if ws, name, ok := events.ParsePlatformSubject(rec.Subject); ok {
			ev.WorkspaceID, ev.Type = ws, name
		}
		if json.Valid(rec.Data) {
			ev.Data = rec.Data
			return ev, true
		}
	}
	msg, err := events.Decode(ev.Type, rec.Data)
	if err != nil {
		ev.Data, _ = json.Marshal(map[string]string{"undecodable": err.Error()})
		return ev, true
	}
	if ev.WorkspaceID == "" {
		ev.WorkspaceID = events.MetaOf(msg).GetWorkspaceId()
	}
	ev.Data, err = protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
	if err != nil {
		ev.Data, _ = json.Marshal(map[string]string{"undecodable": err.Error()})
	}
	return ev, true
}

func (a *app) printTailed(ev tailedEvent) {
	if a.json {
		b, _ := json.Marshal(ev)
		fmt.Fprintln(a.stdout, string(b))
		return
	}
	fmt.Fprintf(a.stdout, "%s  %-9s %-32s %s %s\n", ev.StoredAt, ev.Stream, oneLine(ev.Type), oneLine(ev.Subject), oneLine(ev.EventID))
}
