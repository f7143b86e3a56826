// Package convseal seals a conversation's transcript under a data key of
// its own before it is written to an event stream, so that deleting the
// conversation can make every copy in the append-only log unreadable by
// destroying that one key (crypto-shredding).
//
// A conversation_ended event's data carries, instead of `transcript` and
// `analysis`, the fields
//
//	"transcript_sealed": base64(nonce || AES-256-GCM(transcript)),
//	"transcript_turns":  the number of turns it holds,
//	"analysis_sealed":   base64(nonce || AES-256-GCM(analysis)),
//
// the ciphertext bound to its workspace and conversation (it cannot be
// moved to another). The data keys live in a Keys store (kvkeys keeps
// them in a JetStream key-value bucket, each sealed under the deployment
// secret); a destroyed key is remembered as destroyed, so a conversation
// once deleted never gets a key again.
package convseal

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/voiceai-platform/voiceai/pkg/ids"
)

// Data fields of a sealed conversation_ended event: its transcript and
// its analysis (a summary of the transcript, the reasons of each verdict,
// the data collected from the caller) each sealed in place.
const (
	FieldTranscript     = "transcript"
	FieldSealed         = "transcript_sealed"
	FieldTurns          = "transcript_turns"
	FieldAnalysis       = "analysis"
	FieldAnalysisSealed = "analysis_sealed"
)

// KeySize is a data key's size: AES-256.
const KeySize = 32

// ErrShredded means the conversation's key was destroyed: it was deleted.
var ErrShredded = errors.New("the conversation's transcript key was destroyed (the conversation was deleted)")

// ErrNoKey means the conversation has no key (it never had a sealed
// transcript).
var ErrNoKey = errors.New("the conversation has no transcript key")

// ErrTampered means a sealed transcript does not open under its key: it
// was changed, or moved from another conversation.
var ErrTampered = errors.New("sealed transcript does not open: changed or not this conversation's")

// Keys keeps one data key per conversation.
type Keys interface {
	// Key is the conversation's data key. Without one, create makes it,
	// else the answer is ErrNoKey; a destroyed key answers ErrShredded.
	Key(ctx context.Context, workspaceID, conversationID string, create bool) ([]byte, error)
	// Shred destroys the conversation's key for good (and remembers that
	// it did); shredding again, or a conversation without a key, is fine.
	Shred(ctx context.Context, workspaceID, conversationID string) error
}

// owner binds a sealed transcript to its conversation.
func owner(workspaceID, conversationID string) []byte {
	return ownerAs(KindTranscript, workspaceID, conversationID)
}

// ownerAs binds sealed bytes to their conversation and to what they are,
// so that one kind cannot be passed off as another.
func ownerAs(kind, workspaceID, conversationID string) []byte {
	return []byte(kind + "\x00" + workspaceID + "\x00" + conversationID)
}

// What is sealed under a conversation's key: its transcript, and what is
// written of its content elsewhere (an analysis of it holds a summary of
// the transcript and the judge's reasons).
const (
	KindTranscript = "transcript"
	KindAnalysis   = "analysis"
	KindLabelNote  = "label_note"
	// KindReportedAnalysis is the analysis a call stack reported on
	// conversation_ended (its JSON), sealed in FieldAnalysisSealed.
	KindReportedAnalysis = "reported_analysis"
)

func aead(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal encrypts a transcript under key, bound to its conversation.
func Seal(key []byte, workspaceID, conversationID string, transcript []byte) (string, error) {
	a, err := aead(key)
	if err != nil {
		return "", err
	}
	sealed, err := sealWith(a, transcript, owner(workspaceID, conversationID))
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sealed), nil
}

// sealWith is the nonce, then plaintext sealed under a with it, bound to
// aad.
func sealWith(a cipher.AEAD, plaintext, aad []byte) ([]byte, error) {
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, plaintext, aad), nil
}

// openWith is what sealWith sealed, decrypted into dst (which may be
// sealed[n:n], n the nonce's size, to decrypt in place).
func openWith(a cipher.AEAD, dst, sealed, aad []byte) ([]byte, error) {
	n := a.NonceSize()
	if len(sealed) < n+a.Overhead() {
		return nil, ErrTampered
	}
	out, err := a.Open(dst, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrTampered
	}
	return out, nil
}

// Open decrypts what Seal made for the same conversation.
func Open(key []byte, workspaceID, conversationID, sealed string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return nil, ErrTampered
	}
	return OpenInPlace(key, workspaceID, conversationID, raw)
}

// OpenInPlace is Open of what Seal made, base64-decoded already, and
// decrypts it in place: sealed's bytes are lost, the transcript's are
// returned in their memory. A replay opens tens of thousands of
// transcripts in a row, and a copy of each was garbage.
func OpenInPlace(key []byte, workspaceID, conversationID string, sealed []byte) ([]byte, error) {
	a, err := aead(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < a.NonceSize() {
		return nil, ErrTampered
	}
	return openWith(a, sealed[a.NonceSize():a.NonceSize()], sealed, owner(workspaceID, conversationID))
}

// NewKey is a fresh random data key.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	_, err := rand.Read(k)
	return k, err
}

// SealData replaces the transcript and the analysis of a
// conversation_ended event's data with their sealed forms under the
// conversation's key (made when it has none): the transcript by
// FieldSealed and FieldTurns, the analysis by FieldAnalysisSealed (base64,
// sealed as KindReportedAnalysis). A producer's own sealed fields are
// dropped; without a conversation id to key them to, or once the
// conversation was deleted (its key destroyed), neither is written at all.
// Data with neither is returned as it came.
func SealData(ctx context.Context, keys Keys, workspaceID string, data json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return data, nil
	}
	// Only this function writes the sealed fields: a producer's own
	// are dropped.
	forged := false
	for _, f := range []string{FieldSealed, FieldTurns, FieldAnalysisSealed} {
		if _, ok := fields[f]; ok {
			forged = true
			delete(fields, f)
		}
	}
	transcript, hasTranscript := fields[FieldTranscript]
	analysis, hasAnalysis := fields[FieldAnalysis]
	if !hasTranscript && !hasAnalysis {
		if forged {
			return json.Marshal(fields)
		}
		return data, nil
	}
	delete(fields, FieldTranscript)
	delete(fields, FieldAnalysis)
	hasTranscript = hasTranscript && string(transcript) != "null"
	hasAnalysis = hasAnalysis && string(analysis) != "null"
	var conversationID string
	if json.Unmarshal(fields["conversation_id"], &conversationID) != nil || !ids.Valid(conversationID) || !hasTranscript && !hasAnalysis {
		// No conversation to key them to, or nothing to keep: no
		// reader keeps them, so they are not written.
		return json.Marshal(fields)
	}
	key, err := keys.Key(ctx, workspaceID, conversationID, true)
	switch {
	case errors.Is(err, ErrShredded):
		return json.Marshal(fields)
	case err != nil:
		return nil, err
	}
	if hasTranscript {
		sealed, err := Seal(key, workspaceID, conversationID, transcript)
		if err != nil {
			return nil, err
		}
		fields[FieldSealed], _ = json.Marshal(sealed)
		fields[FieldTurns], _ = json.Marshal(CountTurns(transcript))
	}
	if hasAnalysis {
		a, err := aead(key)
		if err != nil {
			return nil, err
		}
		sealed, err := sealWith(a, analysis, ownerAs(KindReportedAnalysis, workspaceID, conversationID))
		if err != nil {
			return nil, err
		}
		fields[FieldAnalysisSealed], _ = json.Marshal(base64.StdEncoding.EncodeToString(sealed))
	}
	return json.Marshal(fields)
}

// OpenTranscript is the transcript an event's sealed field holds:
// ErrShredded once the conversation was deleted.
func OpenTranscript(ctx context.Context, keys Keys, workspaceID, conversationID, sealed string) (json.RawMessage, error) {
	key, err := keys.Key(ctx, workspaceID, conversationID, false)
	if err != nil {
		return nil, err
	}
	return Open(key, workspaceID, conversationID, sealed)
}

// OpenTranscriptInPlace is OpenTranscript of the sealed bytes, decrypted
// in place (OpenInPlace).
func OpenTranscriptInPlace(ctx context.Context, keys Keys, workspaceID, conversationID string, sealed []byte) (json.RawMessage, error) {
	key, err := keys.Key(ctx, workspaceID, conversationID, false)
	if err != nil {
		return nil, err
	}
	return OpenInPlace(key, workspaceID, conversationID, sealed)
}

// SealAs seals plaintext, something of kind said of a conversation's
// content, under the conversation's key, making the key if it has none:
// deleting the conversation then makes it unreadable with the
// transcript. A deleted conversation's answers ErrShredded: nothing more
// is recorded of it.
func SealAs(ctx context.Context, keys Keys, kind, workspaceID, conversationID string, plaintext []byte) ([]byte, error) {
	a, err := aeadOf(ctx, keys, workspaceID, conversationID, true)
	if err != nil {
		return nil, err
	}
	return sealWith(a, plaintext, ownerAs(kind, workspaceID, conversationID))
}

// OpenAs is the plaintext SealAs sealed as kind for the same
// conversation: ErrShredded once the conversation was deleted,
// ErrTampered when the bytes were changed or are another's. sealed is
// left as it was.
func OpenAs(ctx context.Context, keys Keys, kind, workspaceID, conversationID string, sealed []byte) ([]byte, error) {
	a, err := aeadOf(ctx, keys, workspaceID, conversationID, false)
	if err != nil {
		return nil, err
	}
	return openWith(a, nil, sealed, ownerAs(kind, workspaceID, conversationID))
}

// aeadOf is the cipher of the conversation's key, made first when create
// is set and it has none.
func aeadOf(ctx context.Context, keys Keys, workspaceID, conversationID string, create bool) (cipher.AEAD, error) {
	key, err := keys.Key(ctx, workspaceID, conversationID, create)
	if err != nil {
		return nil, err
	}
	return aead(key)
}

// SealMessage is SealAs of msg, marshalled.
func SealMessage(ctx context.Context, keys Keys, kind, workspaceID, conversationID string, msg proto.Message) ([]byte, error) {
	plain, err := proto.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return SealAs(ctx, keys, kind, workspaceID, conversationID, plain)
}

// OpenMessage opens into msg what SealMessage sealed: the errors are
// OpenAs's.
func OpenMessage(ctx context.Context, keys Keys, kind, workspaceID, conversationID string, sealed []byte, msg proto.Message) error {
	plain, err := OpenAs(ctx, keys, kind, workspaceID, conversationID, sealed)
	if err != nil {
		return err
	}
	return proto.Unmarshal(plain, msg)
}

// MaxTurns bounds a transcript, as the API's conversation_ended schema
// does.
const MaxTurns = 5000

// CountTurns is the number of turns of a transcript in the public shape
// (a JSON array of objects, each with its role), or 0 when it is not one.
func CountTurns(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var turns []struct {
		Role string `json:"role"`
	}
	if json.Unmarshal(raw, &turns) != nil || len(turns) > MaxTurns {
		return 0
	}
	for _, t := range turns {
		if t.Role == "" {
			return 0
		}
	}
	return len(turns)
}

// MemoryKeys keeps the keys in memory, for tests and the use cases'
// memory adapters.
type MemoryKeys struct {
	mu   sync.Mutex
	keys map[string][]byte // nil value: destroyed
}

// NewMemoryKeys is an empty store.
func NewMemoryKeys() *MemoryKeys { return &MemoryKeys{keys: map[string][]byte{}} }

// Key implements Keys.
func (m *MemoryKeys) Key(_ context.Context, workspaceID, conversationID string, create bool) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := workspaceID + "/" + conversationID
	k, ok := m.keys[id]
	switch {
	case ok && k == nil:
		return nil, ErrShredded
	case ok:
		return k, nil
	case !create:
		return nil, ErrNoKey
	}
	k, err := NewKey()
	if err != nil {
		return nil, err
	}
	m.keys[id] = k
	return k, nil
}

// Shred implements Keys.
func (m *MemoryKeys) Shred(_ context.Context, workspaceID, conversationID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[workspaceID+"/"+conversationID] = nil
	return nil
}

// WithoutSealed is an event's data (a JSON object) without its sealed
// transcript and analysis, for copies that must not carry even the
// ciphertext (a webhook delivery). Data without either is answered as it
// is.
func WithoutSealed(data json.RawMessage) json.RawMessage {
	if !bytes.Contains(data, []byte(`"`+FieldSealed+`"`)) && !bytes.Contains(data, []byte(`"`+FieldAnalysisSealed+`"`)) {
		return data
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return data
	}
	delete(fields, FieldSealed)
	delete(fields, FieldAnalysisSealed)
	out, err := json.Marshal(fields)
	if err != nil {
		return data
	}
	return out
}

// DeletedEvent is the PLATFORM record of a conversation's deletion,
// platform.evt.<workspace>.conversation_deleted with data
// {"conversation_id"} (our extension, not a spec 6 event: no webhook can
// subscribe to it, and the API's ingest refuses it). The tickets service
// writes it once the key is destroyed; whoever refers to conversations
// (the tickets' index and projections, the testing service's tests made
// from one) learns the deletion there.
const DeletedEvent = "conversation_deleted"

// DeletedFilter matches those records of every workspace.
const DeletedFilter = "platform.evt.*." + DeletedEvent
