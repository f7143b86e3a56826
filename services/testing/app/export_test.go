package app

// What the external tests (on the memory adapters, which import app)
// reach inside.
var (
	CountOutcomes = (*App).countOutcomes
	CountersTotal = (*App).countersTotal
)

// Enqueue is what the enqueuer does with one invocation event.
var Enqueue = (*App).enqueue
