package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// An operator drops a read model's collection, or a whole service's
// database, under the running platform (or restores an older backup):
// the durables' floors stay ahead, so without the projections'
// checkpoints the listings read from the store would stay short for
// good. They are replayed from the streams instead.
func TestReadModelsDroppedFromTheStoreAreReplayed(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, inStore)
	agent := agentWithTicket(t, s)
	agents, tickets := listed(t, s, "/v1/convai/agents", agent), listed(t, s, "/v1/convai/triage-tickets?agent_id="+agent, ticketTitle)
	eventually(t, 30*time.Second, "the agent and its ticket listed", func() bool { return agents() && tickets() })

	ctx := context.Background()
	mc := (&testenv.Env{MongoURI: s.MongoURI}).Mongo(t)
	if err := mc.Database("voiceai_agents").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := mc.Database("voiceai_tickets").ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$regex", Value: "^tickets"}}}})
	if err != nil || len(names) != 1 {
		t.Fatalf("the tickets' collection: %v %v", names, err)
	}
	if err := mc.Database("voiceai_tickets").Collection(names[0]).Drop(ctx); err != nil {
		t.Fatal(err)
	}
	// (Whether they are listed meanwhile depends on when the projectors
	// look; with the replay disabled they never are again.)
	eventually(t, 60*time.Second, "the agent and its ticket listed again", func() bool { return agents() && tickets() })
}

// The embedded store's files deleted while the platform is stopped (a
// reset of the store by hand): at the next start every read model is
// replayed from the streams before its projector consumes, and the
// listings read from the store hold everything again.
func TestTheStoreDeletedWhileStoppedIsReplayedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	administeredInStore := func(c *Config) { administered(c, []func(*Config){inStore}) }
	s := start(t, dir, administeredInStore)
	agent := agentWithTicket(t, s)
	hook := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"name":"w","url":"https://example.invalid/hook","events":["call_started"]}`)
	if hook.Code != 201 && hook.Code != 200 {
		t.Fatalf("webhook: %d %s", hook.Code, hook.Body)
	}
	all := func(s *Stack) func() bool {
		agents, tickets := listed(t, s, "/v1/convai/agents", agent), listed(t, s, "/v1/convai/triage-tickets?agent_id="+agent, ticketTitle)
		hooks := listed(t, s, "/v1/convai/webhooks", "example.invalid")
		return func() bool { return agents() && tickets() && hooks() }
	}
	eventually(t, 30*time.Second, "the agent, its ticket and the webhook listed", all(s))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "mongo")); err != nil {
		t.Fatal(err)
	}

	s = start(t, dir, administeredInStore)
	eventually(t, 30*time.Second, "the agent, its ticket and the webhook listed again", all(s))
}

// inStore has listings read the store.
func inStore(c *Config) { c.ReadIndex = config.ReadIndexStore }

const ticketTitle = "Quoted the wrong hours"

// agentWithTicket makes an agent with a ticket titled ticketTitle.
func agentWithTicket(t *testing.T, s *Stack) (agent string) {
	t.Helper()
	agent = agentWith(t, s)
	createTicket(t, s, agent, `{"title":"`+ticketTitle+`","qa_comment":"Said 8 to 4."}`)
	return agent
}

// listed is whether a listing of path through s holds text.
func listed(t *testing.T, s *Stack, path, text string) func() bool {
	return func() bool {
		r := call(t, s, "GET", path, adminKey, "")
		return r.Code == 200 && strings.Contains(string(r.Body), text)
	}
}
