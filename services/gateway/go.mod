module github.com/voiceai-platform/voiceai/services/gateway

go 1.26.0

require (
	github.com/voiceai-platform/voiceai/pkg v0.0.0
	github.com/voiceai-platform/voiceai/proto-events v0.0.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nats.go v1.55.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/voiceai-platform/voiceai/pkg => ../../pkg

replace github.com/voiceai-platform/voiceai/proto-events => ../../proto-events
