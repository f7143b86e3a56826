module github.com/voiceai-platform/voiceai/services/gateway

go 1.26.0

require (
	github.com/voiceai-platform/voiceai/pkg v0.0.0
	github.com/voiceai-platform/voiceai/proto-events v0.0.0
)

replace github.com/voiceai-platform/voiceai/pkg => ../../pkg

replace github.com/voiceai-platform/voiceai/proto-events => ../../proto-events
