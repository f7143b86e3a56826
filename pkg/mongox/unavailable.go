package mongox

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// IsUnavailable reports whether err says the store did not answer: no
// server could be selected within the client's server selection timeout
// (the store down, or electing a primary), or the connection broke. A
// retry in a moment may succeed, so the edge answers 503 with Retry-After,
// not a 500 or a wait until the caller gives up.
func IsUnavailable(err error) bool {
	var selection topology.ServerSelectionError
	return err != nil && (errors.As(err, &selection) || mongo.IsNetworkError(err))
}
