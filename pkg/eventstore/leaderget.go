package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// leaderWait bounds how long a read waits for a replicated stream's
// leader before it asks any replica instead: between leaders (an
// election takes seconds) reads go on, a moment stale at worst.
const leaderWait = time.Second

// MsgRequest selects one message of a stream: the last of a subject, the
// first at or after Seq matching NextFor (a subject filter), or the one at
// Seq.
type MsgRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
}

// GetMsg reads one message of stream name (jetstream.ErrMsgNotFound when
// there is none), consistently with every acknowledged write.
//
// Direct gets of a replicated stream are answered by any replica that is
// nearly caught up (nats-server enables them on a follower at 90%), and
// by a partitioned replica cut off from newer writes: a read after an
// acknowledged write could miss it. So reads of a replicated stream ask
// its leader, which holds every acknowledged write, through the stream
// API; only while no leader answers do they fall back to a direct get.
// A single-replica stream has no followers: its direct gets are exact.
//
// Its failures a retry may cure (no stream leader, no responder for a
// moment) are marked so (Classify): a caller passing one on answers 503,
// not 500.
func GetMsg(ctx context.Context, js jetstream.JetStream, name string, req MsgRequest) (*jetstream.RawStreamMsg, error) {
	m, err := getMsg(ctx, js, name, req)
	return m, Classify(err)
}

func getMsg(ctx context.Context, js jetstream.JetStream, name string, req MsgRequest) (*jetstream.RawStreamMsg, error) {
	str, err := StreamOf(ctx, js, name)
	if err != nil {
		return nil, err
	}
	if info := str.CachedInfo(); info != nil && info.Config.Replicas > 1 {
		lctx, cancel := context.WithTimeout(ctx, leaderWait)
		m, err := leaderGet(lctx, js, name, req)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrMsgNotFound) || ctx.Err() != nil || !eventlog.IsUnavailable(Classify(err)) {
			return m, err
		}
		// No leader: a replica's copy is a moment stale at worst, but its
		// "not found" may be a write it has not received yet, so that
		// answer stays the leader's "not now".
		m, derr := directGet(ctx, str, req)
		if errors.Is(derr, jetstream.ErrMsgNotFound) {
			return nil, err
		}
		return m, derr
	}
	return directGet(ctx, str, req)
}

func directGet(ctx context.Context, str jetstream.Stream, req MsgRequest) (*jetstream.RawStreamMsg, error) {
	switch {
	case req.LastFor != "":
		return str.GetLastMsgForSubject(ctx, req.LastFor)
	case req.NextFor != "":
		return str.GetMsg(ctx, req.Seq, jetstream.WithGetMsgSubject(req.NextFor))
	default:
		return str.GetMsg(ctx, req.Seq)
	}
}

// leaderGet is a STREAM.MSG.GET request, which only the stream's leader
// answers.
func leaderGet(ctx context.Context, js jetstream.JetStream, name string, req MsgRequest) (*jetstream.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	reply, err := js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+name, body)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("stream %s: undecodable answer: %w", name, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, jetstream.ErrInvalidJetStreamResponse
	}
	var h nats.Header
	if len(resp.Message.Header) > 0 {
		if h, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, err
		}
	}
	return &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Seq, Header: h, Data: resp.Message.Data, Time: resp.Message.Time}, nil
}
