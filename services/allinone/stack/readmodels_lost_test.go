package stack

import (
	"context"
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
	s := startAdmin(t, func(c *Config) { c.ReadIndex = config.ReadIndexStore })
	agent := agentWith(t, s)
	if r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"title":"Quoted the wrong hours","qa_comment":"Said 8 to 4."}`); r.Code != 201 {
		t.Fatalf("ticket: %d %s", r.Code, r.Body)
	}
	listed := func(path, id string) func() bool {
		return func() bool {
			r := call(t, s, "GET", path, adminKey, "")
			return r.Code == 200 && strings.Contains(string(r.Body), id)
		}
	}
	agents, tickets := listed("/v1/convai/agents", agent), listed("/v1/convai/triage-tickets?agent_id="+agent, "Quoted the wrong hours")
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
	if agents() || tickets() {
		t.Fatal("still listed once dropped: the listings do not read the store")
	}
	eventually(t, 60*time.Second, "the agent and its ticket listed again", func() bool { return agents() && tickets() })
}
