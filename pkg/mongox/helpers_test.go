package mongox

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// collection is a collection of the test store's database "mongox".
func collection(t *testing.T, name string) *mongo.Collection {
	t.Helper()
	return testenv.New(t).Mongo(t).Database("mongox").Collection(name)
}
