module github.com/voiceai-platform/voiceai/proto-events

go 1.26.0
