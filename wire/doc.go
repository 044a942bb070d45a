// Package wire is the codec of the Iggy binary protocol 0.11.0, client and
// replica planes alike: headers, operations, payloads, batches, checksums.
// It does no I/O. Every decoder returns an error (a *DecodeError, matched by
// errors.Is(err, ErrMalformed)) on any input and never panics.
//
// # Headers: one generic Header, one view per command
//
// Every frame on both planes is a 256-byte Header followed by size-256 body
// bytes (replica-plane.md 0.1, 1.1). The first 128 bytes are common
// (checksum, checksum_body, cluster, size, view, release, command, replica;
// replica-plane.md 1.2) and are read and written by Header's own accessors.
// The command byte (offset 60) picks the shape of bytes 128..256, and each
// shape is a view: a plain struct with
//
//   - a Header method that reads it without judging it (h.Request(),
//     h.Prepare(), h.DoViewChange(), ...);
//   - Encode(h *Header), which zeroes h, writes size, command and the
//     common fields, the per-command fields, and, for the commands the
//     replica plane seals (replica-plane.md 1.3), the frame seal last
//     (2.1); DoViewChange/StartView take the body seal as a field and the
//     AppendDoViewChange/AppendStartView helpers compute it from the body;
//   - DecodeXxxHeader(h *Header), which types and validates in the order of
//     replica-plane.md 1.5: the command byte, the bit patterns of enumerated
//     fields (operation, outcome), the frame seal for sealed commands (so
//     no field is believed before the seal verifies), then the per-command
//     validator of 1.4.x.
//
// Client plane (client_headers.go): RequestHeader (command 5),
// ReplyHeader (8), EvictionHeader (13). Replica plane: PrepareHeader (6 and
// 19), PrepareOkHeader (7) and CommitHeader (9) in replica_headers.go; the
// view change (StartViewChangeHeader 10, DoViewChangeHeader 11,
// StartViewHeader 12, RequestStartViewHeader 17), repair
// (RequestPreparesHeader 18, RepairRangeReplyHeader 20/21), state transfer
// (22..25) and session forwarding (26..29) views in replica_views.go; the
// routed request, which is the client RequestHeader with group at 248,
// through DecodeRoutedRequest; and the unsealed handshake frames
// HelloHeader, ChallengeHeader and FinishHeader (14..16) in handshake.go.
// Views carry only the fields a validator or a consumer reads: reserved
// regions that are not validated re-encode as zero.
//
// Connection-level rules sit beside the views: Command.Valid (a byte above
// 29 closes the connection), ValidReplicaCommand (which commands an
// established replica link types at all) and GroupOf (which consensus
// group a replica frame routes to, replica-plane.md 4.2).
//
// # Integrity on the replica plane
//
// FrameSeal/Header.Seal/SealValid (2.1), PrepareIdentity and VerifyPrepare
// (2.2, 2.4), BodySeal (2.3). The DoViewChange/StartView suffix (6.5) is
// built by BuildSuffix and checked by DecodeSuffix, DecodeDoViewChange and
// DecodeStartView (body seal, then 6.5.3). State-transfer artifacts owned
// here: the ISM1 StateManifest (7.8.1) and the ICO1
// ConsumerOffsetsArtifact (7.8.3), each with its H64 trailer verified
// before anything else is read. The handshake key and MAC (3.3, 3.6) are
// ClusterID, MACKey, HandshakeMAC and MACEqual.
//
// # Message batches and at-rest encryption
//
// Batch (batch.go) is a view over the one message layout of the Message
// batches page; ValidateBatch, the Stamp methods and AppendRecord work on
// the bytes in place. BatchCipher (batch_crypt.go) seals a batch for
// system.encryption into the same layout, each frame
// [header 48][nonce 12][AES-256-GCM of payload ‖ user headers][tag 16]
// with payload_length = 12 + payload and user_headers_length = headers +
// 16, checksums recomputed over the sealed bytes so the sealed batch
// validates without the key; AppendOpenedRecord and OpenBatchInPlace
// rebuild the plaintext record a poll serves (client-plane.md 13.4). The
// node seals at the partition primary's admission, so prepares, segments
// and state transfers all carry the sealed bytes (actors/encryption.go).
package wire
