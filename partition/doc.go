// Package partition is the pure core of one partition: its committed
// message log, logical segments, tail cache, consumer offsets and polling
// (server-behaviour.md 5, 6; client-plane.md 7.17, 7.19, 8.4, 8.5, 8.9,
// 12.2, 13; replica-plane.md 5.13, 13.3, 13.4). Like the VSR core it is a
// plain value with no goroutines, clocks, sockets or actor imports; the
// partition actor owns one Log, feeds it the consensus core's outputs and
// carries its results to storage and to clients (DESIGN.md, "Pure cores,
// actor shells").
//
// # How the shell drives it
//
//   - Journal (Ready.Journal of the partition's VSR core). The primary
//     stamps each SendMessages prepare body with StampNext before
//     journaling it; a backup checks it with VerifyStamp and drops the
//     prepare on error. Both count the batch's offsets as journaled, so
//     pipelined batches get consecutive offsets. A failed append (or a
//     view change dropping uncommitted ops) calls RollbackJournal with the
//     first dropped batch's base offset.
//   - Commit (Ready.Commit, in op order). SendMessages: ApplySend, then the
//     store write, then MarkPersisted. Consumer-offset ops:
//     ApplyStoreOffset / ApplyDeleteOffset (NoAck writes and poll
//     auto-commits call them directly, 5.5.7, 6.5). TruncatePartition:
//     Truncate, then storage DeleteBatchesBelow(OldestRetained). Purge:
//     Purge, then the storage reset.
//   - Admission at the primary (5.13 rule 5): CheckStore and CheckDelete
//     decide 4100 and 3021 against committed state; DeleteSegmentsUpTo
//     resolves DeleteSegments' segments_count to the up_to_offset of the
//     TruncatePartition prepare (replica-plane.md 13.1, op 68).
//   - Reads: Poll / AppendPollReply (with GetOffset for Next), Stats,
//     Segments, GetOffset for GetConsumerOffset.
//   - Boot: Restore from a storage scan (BatchInfoOf per batch) and the
//     stored consumer offsets.
//
// # Invariants
//
//   - Offsets are dense and never renumbered (5.4.1, 5.7.6): committed
//     batches are contiguous, entry i+1 starts where entry i ends; ApplySend
//     refuses anything else (ErrNotContiguous).
//   - oldest retained <= HighWatermark <= JournalNext. The commit frontier
//     (HighWatermark, CurrentOffset) moves only in ApplySend, Restore and
//     Purge: a poll never serves a journaled but uncommitted batch (0.6),
//     and admission checks see committed state only.
//   - A stored consumer offset is never above the newest committed offset
//     (6.3.2); offsets admitted before a purge and committed after it are
//     discarded by the same rule (5.8.3).
//   - Segments are whole batches; the last segment is the active one, never
//     sealed and never deleted (5.6.4); Truncate removes only leading sealed
//     segments, so deletions keep segment boundaries, and Restore recomputes
//     exactly the live segments from the retained batches.
//   - A cached batch is evicted only once MarkPersisted says the Store
//     holds it.
//
// A broken invariant (a stamped batch that is not a validated batch, a
// restore onto a used log) panics with the invariant's name for the actor's
// supervisor; bad input never does.
//
// # Choices where the spec leaves room
//
//   - Segments are logical (replica-plane.md 13.3 allows any deterministic
//     layout): a segment is a run of whole batches, sized by batch_length,
//     sealed once an append makes it reach segment_size, with a new empty
//     active segment opened at the next offset (5.6.3). Storage keeps
//     batches by base offset; segment files, when someone needs them, are
//     the concatenation of a segment's batches.
//   - Message offsets are base_offset + frame index. Producers write
//     offset_delta = frame index (13.2) and admission does not check it;
//     slicing goes through wire.AppendRecord, which selects frames by
//     offset_delta, and a batch whose deltas would serve nothing at the
//     poll's start is skipped rather than served out of order.
//   - Timestamp polls binary-search base_timestamp, which prepare
//     timestamps keep strictly increasing per partition (5.4.2).
//   - "Empty partition" for CheckStore means no message committed since
//     creation or the last purge (HasMessages): a partition whose messages
//     were all deleted by retention still accepts offsets up to its current
//     offset.
//   - The consumer barrier (5.7.4, upstream) applies to Truncate and to
//     RetentionCandidates; it is the smallest offset in this replica's table,
//     so replicas may keep slightly different prefixes (retention is
//     node-local anyway, 5.7.1).
//   - The TruncatePartition watermark is kept (5.9.3) and re-evaluated on
//     every Truncate call, so a replica that applies it before sealing the
//     segments it covers removes them on a later call (Truncate(0) re-runs
//     it). Purge wipes it (5.8.1).
//   - Poll replies stop before the records would pass MaxPollBytes
//     (5.5.5, Recommended), always serving the first record whole.
//   - Retention (5.7) is computed, not applied: ExpiredSegments,
//     SizeBudget, OversizeSegments and RetentionCandidates (barrier and the
//     16-segments-per-pass cap included) tell the cleaner what to Truncate.
//   - Purge is a partition-local reset: in a cluster the shell must apply
//     it at the same point of every replica's partition log (for instance
//     as a partition-group op), since batches stamped before it fail
//     ApplySend afterwards. Generation counts purges for the shell.
//   - Restore takes the lowest commit frontier as well as the batches, so a
//     partition whose retained batches were all deleted keeps its offsets.
//     Stored offsets past the restored newest offset are clamped to it.
//
// # Encryption at rest
//
// With Config.Cipher set (system.encryption), the batches the log is
// handed are already sealed (wire/batch_crypt.go; the shell seals at
// admission, before the prepare is built): StampNext, VerifyStamp,
// ApplySend, the index, the segments, the cache and the sizes Stats
// reports all see the sealed bytes, as storage and state transfer do.
// Only Poll opens them: every record it serves, cached or read back,
// whole or sliced, is decrypted and rebuilt with its lengths and
// checksums recomputed (client-plane.md 13.4), the record a log without
// encryption serves. An evicted batch served whole is opened in place in
// the reply it was read into. A batch that fails authentication (another
// key, tampered bytes) fails the poll with wire.ErrCannotDecryptData; it
// is not served as ciphertext.
//
// # Performance
//
// Poll finds its first batch by binary search over the 24-byte-per-batch
// index, serves cached batches as stored (whole) or sliced (first and
// last record only), and allocates nothing but dst's growth; ApplySend
// keeps a reference to the committed bytes instead of copying them. A
// spliced poll that slices an evicted batch keeps the batch it read (one,
// counted in CachedBytes, shed after the cached batches) for the next poll, which starts in
// it: a consumer whose polls do not line up with the batches reads each
// evicted batch once instead of twice, and serves its frames by reference.
// Better still, a batch committed with the frame table its admission
// gathered (ApplySendIndexed) keeps the table and, once evicted, its
// header (about 1.2 % of a batch of 1 KB messages, counted in
// CachedBytes, shed after the cached batches and the read-back one): a
// poll that asks for stored sources (a carrier that sends files) slices
// it without reading it, the record's header built from the kept one and
// its frames a range of the stored batch (RangeSource), sent from the
// file as a whole evicted batch is.
package partition
