// Package testkit holds the pure helpers of tests: waiting for a state
// (Eventually), asserting an error's kind, the ids of a listing, a fixed
// sealer, a free port, a log sink, a reference webhook signature. It
// links no infrastructure, so a use-case test that needs them stays free
// of NATS and Mongo; the servers and stores tests run against are package
// testenv's.
package testkit
