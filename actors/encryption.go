package actors

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/config"
	"iggynode/storage"
	"iggynode/wire"
)

// At-rest encryption (server-behaviour.md 11.3, system.encryption):
// AES-256-GCM of message payloads and user headers, in the sealed batch
// layout of wire/batch_crypt.go. Choices:
//
//   - Where: the partition primary seals a SendMessages batch at admission
//     (onSend), after ValidateBatch and the partition stamp and before the
//     prepare is built. The prepare's identity covers its size
//     (replica-plane.md 2.2) and sealing grows each message by 28 bytes, so
//     it cannot wait for the journal stamp (5.13 rule 3), which comes after
//     the identity is sealed; the stamp then writes base_offset and
//     base_timestamp into the sealed batch like into any other. From
//     admission on, the batch travels as the sealed bytes: journal,
//     segments, tail cache, repair, state transfer; only polls open it.
//   - Replication: prepares carry the sealed batch. A backup checks the
//     stamp on the sealed bytes (the checksums are over the sealed frames,
//     so ValidateBatch holds without the key) and journals and stores the
//     primary's bytes verbatim, so every replica's segments are
//     byte-identical and nothing is sealed twice; the committed tail
//     (tail.go) rebuilds prepares from them, and SEGMENT_LOG artifacts
//     (13.3) are the sealed batches as stored. A backup needs the key only
//     to serve polls, so every node of a cluster needs the same key. A
//     send a backup forwards to its primary (partition_forward.go) is the
//     client's request in flight, sealed when the primary admits it;
//     nothing of it is written on the way.
//   - Reads: every poll record is opened and rebuilt (partition.Config.Cipher;
//     client-plane.md 13.4). A batch that fails authentication is
//     answered CannotDecryptData (72), never served as ciphertext.
//   - Start: a key that does not decode refuses the start
//     (config.Encryption.KeyBytes). The store records the mode and a key
//     check (storage.CheckEncryption): switching encryption on or off over
//     stored batches refuses the start; another key than the batches were
//     sealed with is logged, and the node serves everything but messages:
//     polls and sends are answered InvalidEncryptionKey (70), so no batch
//     is sealed under a second key beside the first.
//   - A sealed prepare that would exceed message_bus.max_message_size (it
//     could not be replicated) is refused with CannotEncryptData (71), as
//     is a batch whose nonces cannot be drawn.
//   - Not encrypted: metadata (names, users, offsets) and the replica
//     plane in flight (cluster.tls covers that).

// atRest is the node's encryption at rest: cipher nil when it is off;
// refusal the status polls and sends of messages get when the key does
// not open the stored messages (0: none).
type atRest struct {
	cipher  *wire.BatchCipher
	refusal wire.ErrorCode
}

// openAtRest builds the configured cipher and checks it against what the
// store's batches were written with.
func openAtRest(cfg config.Encryption, store *storage.Store, log *slog.Logger) (atRest, error) {
	if !cfg.Enabled {
		if err := store.CheckEncryption(nil); err != nil {
			return atRest{}, fmt.Errorf("system.encryption is disabled: %w; enable it with the key they were written with", err)
		}
		return atRest{}, nil
	}
	key, err := cfg.KeyBytes()
	if err != nil {
		return atRest{}, err
	}
	c, err := wire.NewBatchCipher(key)
	if err != nil {
		return atRest{}, fmt.Errorf("system.encryption.key: %w", err)
	}
	switch err := store.CheckEncryption(c); {
	case err == nil:
		log.Info("at-rest encryption of message payloads and user headers is on", "cipher", "AES-256-GCM")
		return atRest{cipher: c}, nil
	case errors.Is(err, storage.ErrWrongEncryptionKey):
		log.Error("system.encryption.key does not open the messages stored in this data directory (another key sealed them): "+
			"polls and sends of messages are refused with InvalidEncryptionKey (70) until the node restarts with their key",
			"path", store.Dir(), "err", err)
		return atRest{cipher: c, refusal: wire.ErrInvalidEncryptionKey}, nil
	default:
		return atRest{}, fmt.Errorf("system.encryption is enabled: %w", err)
	}
}

// sealForPrepare seals an admitted batch into a new prepare frame (256
// bytes for the prepare header, then the sealed batch), or says with which
// status the send is refused.
func (p *partitionActor) sealForPrepare(batch []byte) ([]byte, wire.ErrorCode) {
	enc := p.node.atRest
	if enc.refusal != 0 {
		return nil, enc.refusal
	}
	size := wire.HeaderSize + wire.SealedSize(batch)
	if limit := uint64(p.node.opts.Config.MessageBus.MaxMessageSize); size > limit {
		p.log.Warn("refusing a batch whose encrypted prepare would exceed message_bus.max_message_size", "bytes", size, "max", limit)
		return nil, wire.ErrCannotEncryptData
	}
	frame, err := enc.cipher.AppendSealedBatch(make([]byte, wire.HeaderSize, size), batch)
	if err != nil {
		p.log.Error("encrypting a batch", "err", err)
		return nil, wire.ErrCannotEncryptData
	}
	return frame, 0
}

// refusePoll answers a poll the node cannot serve in plaintext: any poll
// when the key does not open the stored messages, or one whose read met a
// batch that does not authenticate (err from the log). It reports whether
// it answered.
func (p *partitionActor) refusePoll(ctx actor.Context, m *partitionPoll, err error) bool {
	code := p.node.atRest.refusal
	if code == 0 && errors.Is(err, wire.ErrCannotDecryptData) {
		code = wire.ErrCannotDecryptData
	}
	if code == 0 {
		return false
	}
	p.replyTo(ctx, m.req, denyReply(&m.req.hdr, m.req.connID, 0, code))
	return true
}
