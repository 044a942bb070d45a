package wire

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/zeebo/xxh3"
)

// At-rest encryption of message batches (server-behaviour.md 11.3,
// system.encryption; client-plane.md 13.4, last item; replica-plane.md
// 13.3 item 1).
//
// A sealed batch keeps the batch layout, so whatever walks, stamps,
// validates, stores or transfers batches handles it unchanged; only the
// bytes after each frame header differ:
//
//	sealed frame = [frame header: 48][nonce: 12][ciphertext of payload ‖ user_headers][tag: 16]
//
// One AES-256-GCM seal per message covers its payload and its user headers
// together (one nonce, one tag). The frame header stays in the clear and is
// the seal's additional data (frame bytes 8..48: id, offset_delta,
// timestamp_delta, both sealed lengths, reserved), so a ciphertext cannot
// be moved under another message's header nor its payload/headers split
// shifted. In a sealed header
//
//	payload_length      = 12 + len(payload)        the nonce, then the payload's ciphertext
//	user_headers_length = len(user_headers) + 16   the user headers' ciphertext, then the tag
//
// so the frame walk (48 + payload_length + user_headers_length) steps over
// a sealed frame exactly and the plaintext lengths come back by
// subtraction. The frame checksum (client-plane.md 12.1) is recomputed over
// the sealed frame and the batch checksum (12.2) over the header with the
// sealed batch_length, so a sealed batch passes ValidateBatch like any
// other: stamping, a backup's stamp check (replica-plane.md 5.13 rule 4),
// storage and state transfer need no key. message_count and the other
// header fields are unchanged; each message grows by SealOverhead bytes.
//
// Opening reverses it into the reply: each frame is authenticated and
// decrypted, its header gets the plaintext lengths back and its checksum is
// recomputed, and the record header gets batch_length, message_count and
// the batch checksum recomputed (client-plane.md 13.4). Every byte a frame
// checksum covers is restored, so the recomputed checksums are the
// producer's and a record is byte for byte what a node without encryption
// serves.
//
// Nonces are 12 random bytes per message from crypto/rand, stored in front
// of the ciphertext; nothing derives or reuses them. With random 96-bit
// nonces the chance that any two of the first 2^32 messages sealed under
// one key share a nonce stays below 2^-32 (NIST SP 800-38D, 8.3).
//
// Nothing here allocates per message: sealing and opening write straight
// into dst, which grows at most once per batch.

const (
	// EncryptionKeySize is the AES-256 key size (system.encryption.key
	// decodes to it).
	EncryptionKeySize = 32
	// SealNonceSize and SealTagSize are the GCM nonce in front of a sealed
	// message and the tag after it.
	SealNonceSize = 12
	SealTagSize   = 16
	// SealOverhead is how much a message grows when sealed.
	SealOverhead = SealNonceSize + SealTagSize
)

// BatchCipher seals and opens batches with one AES-256-GCM key. It is safe
// for concurrent use.
type BatchCipher struct {
	aead cipher.AEAD
	// random yields the nonces; crypto/rand outside tests.
	random io.Reader
}

// NewBatchCipher returns the cipher of a 32-byte key; any other length is
// ErrInvalidEncryptionKey.
func NewBatchCipher(key []byte) (*BatchCipher, error) {
	if len(key) != EncryptionKeySize {
		return nil, fmt.Errorf("wire: encryption key of %d bytes, want %d: %w", len(key), EncryptionKeySize, ErrInvalidEncryptionKey)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("wire: encryption key: %v: %w", err, ErrInvalidEncryptionKey)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("wire: encryption key: %v: %w", err, ErrInvalidEncryptionKey)
	}
	return &BatchCipher{aead: aead, random: rand.Reader}, nil
}

// SealedSize is the size of the batch b once sealed.
func SealedSize(b Batch) uint64 {
	if len(b) < BatchHeaderSize {
		return uint64(len(b))
	}
	return uint64(len(b)) + uint64(b.MessageCount())*SealOverhead
}

// AppendSealedBatch appends b sealed to dst. b must be a whole batch whose
// frames tile it and match message_count (a batch that passed
// ValidateBatch); its header is copied as it stands, with batch_length and
// the checksums recomputed. On error (ErrCannotEncryptData: b is not such a
// batch, or no nonce could be drawn) dst is returned unchanged.
func (c *BatchCipher) AppendSealedBatch(dst []byte, b Batch) ([]byte, error) {
	if err := checkSealable(b); err != nil {
		return dst, err
	}
	size := SealedSize(b)
	if size > math.MaxInt {
		return dst, batchErr(ErrCannotEncryptData, "sealed batch of %d bytes", size)
	}
	at := len(dst)
	dst = slices.Grow(dst, int(size))
	dst = append(dst, b[:BatchHeaderSize]...)
	binary.LittleEndian.PutUint64(dst[at+BatchLengthOffset:], size)
	var sum batchHasher
	sum.begin(dst[at:])
	it := b.Frames()
	for {
		f, ok := it.Next()
		if !ok {
			break
		}
		fs := len(dst)
		dst = append(dst, f[:FrameHeaderSize]...)
		binary.LittleEndian.PutUint32(dst[fs+FramePayloadLengthOffset:], f.PayloadLength()+SealNonceSize)
		binary.LittleEndian.PutUint32(dst[fs+FrameUserHeadersLengthOffset:], f.UserHeadersLength()+SealTagSize)
		nonce := dst[fs+FrameHeaderSize : fs+FrameHeaderSize+SealNonceSize]
		dst = dst[:fs+FrameHeaderSize+SealNonceSize]
		if _, err := io.ReadFull(c.random, nonce); err != nil {
			return dst[:at], batchErr(ErrCannotEncryptData, "drawing a nonce: %v", err)
		}
		// The output goes after the nonce: neither it nor the additional
		// data (the header just written) overlaps it.
		dst = c.aead.Seal(dst, nonce, f[FrameHeaderSize:], dst[fs+FrameIDOffset:fs+FrameHeaderSize])
		binary.LittleEndian.PutUint64(dst[fs:], xxh3.Hash(dst[fs+FrameIDOffset:]))
		sum.add(dst[fs:])
	}
	binary.LittleEndian.PutUint64(dst[at+BatchChecksumOffset:], sum.sum())
	return dst, nil
}

// checkSealable refuses what AppendSealedBatch cannot seal: frames that do
// not tile the batch or disagree with message_count, and lengths that
// would overflow a u32 once sealed.
func checkSealable(b Batch) error {
	if len(b) < BatchHeaderSize {
		return batchErr(ErrCannotEncryptData, "%d bytes, shorter than the 256-byte header", len(b))
	}
	it := b.Frames()
	var n uint32
	for {
		f, ok := it.Next()
		if !ok {
			break
		}
		if f.PayloadLength() > math.MaxUint32-SealNonceSize || f.UserHeadersLength() > math.MaxUint32-SealTagSize {
			return batchErr(ErrCannotEncryptData, "frame %d: lengths overflow once sealed", n)
		}
		n++
	}
	if len(it.Rest()) != 0 || n != b.MessageCount() {
		return batchErr(ErrCannotEncryptData, "%d frames tile %d of %d blob bytes, message_count %d",
			n, len(b)-BatchHeaderSize-len(it.Rest()), len(b)-BatchHeaderSize, b.MessageCount())
	}
	return nil
}

// sealedLengths returns the plaintext payload and user-headers lengths of a
// sealed frame, or false when its lengths cannot hold a nonce and a tag.
func sealedLengths(f MessageFrame) (payload, headers uint32, ok bool) {
	p, h := f.PayloadLength(), f.UserHeadersLength()
	if p < SealNonceSize || h < SealTagSize {
		return 0, 0, false
	}
	return p - SealNonceSize, h - SealTagSize, true
}

// AppendOpenedRecord is AppendRecord for a sealed stored batch b: it
// selects the same frames (at most maxCount, from the first whose offset is
// >= start) and appends them decrypted as one record rebuilt from b's
// header, with batch_length, message_count and every checksum recomputed,
// even when it serves all of b. It returns the extended dst and the number
// of messages served (0: nothing appended). A frame that is not sealed or
// fails authentication (a wrong key, tampered bytes) is
// ErrCannotDecryptData, and dst is returned unchanged. dst grows at most
// once; nothing else is allocated.
func (c *BatchCipher) AppendOpenedRecord(dst []byte, b Batch, start uint64, maxCount uint32) ([]byte, uint32, error) {
	from, to, taken := RecordFrames(b, start, maxCount)
	if taken == 0 {
		return dst, 0, nil
	}
	it := FrameIter{rest: b[from:to]}
	for i := 0; ; i++ {
		f, ok := it.Next()
		if !ok {
			break
		}
		if _, _, ok := sealedLengths(f); !ok {
			return dst, 0, batchErr(ErrCannotDecryptData, "batch at %d, frame %d: lengths %d/%d cannot hold a nonce and a tag",
				b.BaseOffset(), i, f.PayloadLength(), f.UserHeadersLength())
		}
	}
	size := BatchHeaderSize + (to - from) - int(taken)*SealOverhead
	at := len(dst)
	dst = slices.Grow(dst, size)
	dst = append(dst, b[:BatchHeaderSize]...)
	binary.LittleEndian.PutUint64(dst[at+BatchLengthOffset:], uint64(size))
	binary.LittleEndian.PutUint32(dst[at+BatchMessageCountOffset:], taken)
	var sum batchHasher
	sum.begin(dst[at:])
	it = FrameIter{rest: b[from:to]}
	for i := 0; ; i++ {
		f, ok := it.Next()
		if !ok {
			break
		}
		payload, headers, _ := sealedLengths(f)
		fs := len(dst)
		dst = append(dst, f[:FrameHeaderSize]...)
		binary.LittleEndian.PutUint32(dst[fs+FramePayloadLengthOffset:], payload)
		binary.LittleEndian.PutUint32(dst[fs+FrameUserHeadersLengthOffset:], headers)
		nonce, sealed := f[FrameHeaderSize:FrameHeaderSize+SealNonceSize], f[FrameHeaderSize+SealNonceSize:]
		out, err := c.aead.Open(dst, nonce, sealed, f[FrameIDOffset:FrameHeaderSize])
		if err != nil {
			return dst[:at], 0, batchErr(ErrCannotDecryptData, "batch at %d, frame %d: %v", b.BaseOffset(), i, err)
		}
		dst = out
		binary.LittleEndian.PutUint64(dst[fs:], xxh3.Hash(dst[fs+FrameIDOffset:]))
		sum.add(dst[fs:])
	}
	binary.LittleEndian.PutUint64(dst[at+BatchChecksumOffset:], sum.sum())
	return dst, taken, nil
}

// OpenBatchInPlace opens the whole sealed batch b where it lies (a stored
// batch read straight into a reply) and returns the length of the record
// it leaves at the front of b, rebuilt as AppendOpenedRecord rebuilds one.
// The frames must tile b and match message_count. On error
// (ErrCannotDecryptData) the contents of b are undefined.
func (c *BatchCipher) OpenBatchInPlace(b []byte) (int, error) {
	if len(b) < BatchHeaderSize {
		return 0, batchErr(ErrCannotDecryptData, "%d bytes, shorter than the 256-byte header", len(b))
	}
	count := Batch(b).MessageCount()
	r, w := BatchHeaderSize, BatchHeaderSize // read and write positions, w <= r
	var n uint32
	for r < len(b) {
		rest := b[r:]
		if len(rest) < FrameHeaderSize || msgFrameSize(rest) > uint64(len(rest)) {
			return 0, batchErr(ErrCannotDecryptData, "frame %d does not fit the batch", n)
		}
		f := MessageFrame(rest[:msgFrameSize(rest)])
		payload, headers, ok := sealedLengths(f)
		if !ok {
			return 0, batchErr(ErrCannotDecryptData, "frame %d: lengths %d/%d cannot hold a nonce and a tag", n, f.PayloadLength(), f.UserHeadersLength())
		}
		sealed := f[FrameHeaderSize+SealNonceSize:]
		// In place: the output is exactly the ciphertext's start.
		if _, err := c.aead.Open(sealed[:0], f[FrameHeaderSize:FrameHeaderSize+SealNonceSize], sealed, f[FrameIDOffset:FrameHeaderSize]); err != nil {
			return 0, batchErr(ErrCannotDecryptData, "frame %d: %v", n, err)
		}
		plain := int(payload) + int(headers)
		// The frame moves down by SealOverhead per frame before it; the
		// header (w+48 <= r+48) never reaches the plaintext (r+60 on).
		copy(b[w:w+FrameHeaderSize], f[:FrameHeaderSize])
		binary.LittleEndian.PutUint32(b[w+FramePayloadLengthOffset:], payload)
		binary.LittleEndian.PutUint32(b[w+FrameUserHeadersLengthOffset:], headers)
		copy(b[w+FrameHeaderSize:], sealed[:plain])
		end := w + FrameHeaderSize + plain
		binary.LittleEndian.PutUint64(b[w:], xxh3.Hash(b[w+FrameIDOffset:end]))
		r += len(f)
		w = end
		n++
	}
	if n != count {
		return 0, batchErr(ErrCannotDecryptData, "%d frames, message_count %d", n, count)
	}
	binary.LittleEndian.PutUint64(b[BatchLengthOffset:], uint64(w))
	binary.LittleEndian.PutUint64(b[BatchChecksumOffset:], ComputeBatchChecksum(b[:w]))
	return w, nil
}

// SealValue appends nonce ‖ AES-256-GCM(plaintext, additional data aad) ‖
// tag to dst: a small record sealed like a message (storage's key check).
func (c *BatchCipher) SealValue(dst, plaintext, aad []byte) ([]byte, error) {
	at := len(dst)
	dst = slices.Grow(dst, SealNonceSize+len(plaintext)+SealTagSize)[:at+SealNonceSize]
	if _, err := io.ReadFull(c.random, dst[at:]); err != nil {
		return dst[:at], batchErr(ErrCannotEncryptData, "drawing a nonce: %v", err)
	}
	return c.aead.Seal(dst, dst[at:], plaintext, aad), nil
}

// OpenValue appends the plaintext of a SealValue record to dst;
// ErrCannotDecryptData when it does not authenticate under this key.
func (c *BatchCipher) OpenValue(dst, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < SealOverhead {
		return dst, batchErr(ErrCannotDecryptData, "sealed value of %d bytes", len(sealed))
	}
	out, err := c.aead.Open(dst, sealed[:SealNonceSize], sealed[SealNonceSize:], aad)
	if err != nil {
		return dst, batchErr(ErrCannotDecryptData, "sealed value: %v", err)
	}
	return out, nil
}
