// Package bench is iggynode's load generator (cmd/bench is its command):
// producers and consumers driven through the Go SDK (package client)
// against a node, or against Sink, a built-in server that answers without
// storing anything so the same client measures the transport ceiling.
//
// # Workloads (Run)
//
// Config.Workload picks the shape, after Iggy's iggy-bench:
//
//   - mixed (the default, ""): producers and consumers side by side,
//     placed round-robin as below.
//   - pinned-producer: producers only, producer i on stream i.
//   - pinned-consumer: consumers only, consumer i reading stream i from
//     offset 0 (existing data; the sink serves canned data).
//   - pinned-producer-and-consumer: producer i and consumer i on stream i.
//   - balanced-producer: producers only, all on one stream whose topic has
//     one partition per producer by default, sending with Balanced
//     partitioning (the SDK picks the partitions round-robin).
//   - balanced-consumer-group: consumers only, one stream, one partition per
//     consumer by default; setup finds or creates the group
//     Config.ConsumerGroup ("bench-group"), every consumer joins it and polls
//     with client.PollConsumerGroup (Next strategy, auto commit) until
//     together they have read Consumers*BatchCount*MessagesPerBatch messages
//     (a shared quota: each poll claims its count first and gives back what
//     it did not get, so the total is exact). Against a node the group's
//     committed offsets persist, so a second run reads on from the first.
//   - end-to-end-producing-consumer: Producers actors, each on its own
//     stream, that send a batch and poll it back from the confirmed base
//     offset until all of it is read, BatchCount times; the latency is from
//     the send to the poll that completes the batch, not counting the rate
//     limiter's wait before the send (group "producing consumers" in the
//     report; the header counts them as producing consumers).
//   - balanced-producer-and-consumer-group: producers send Balanced to one
//     stream while consumers of the group read, together, every message
//     sent (the shared quota is Producers*BatchCount*MessagesPerBatch);
//     max(producers, consumers) partitions by default.
//   - end-to-end-producing-consumer-group: Producers actors, one stream,
//     all members of the group: each sends a batch Balanced and polls the
//     group, BatchCount times, then polls on until the group has read every
//     message sent. Latency is a message's age when polled (reply time
//     minus the oldest polled message's origin timestamp, stamped after the
//     rate limiter's wait). No warmup: its messages would be read as
//     measured ones.
//
// The pinned and the end-to-end-producing-consumer workloads use one
// stream per actor (Streams must be left 0 or equal the actor count).
//
// cmd/bench also takes upstream iggy-bench's form, BENCHMARK [flags]
// TRANSPORT [flags] (pinned-producer ... tcp --server-address A), beside
// --workload.
//
// Setup makes sure streams <prefix><n> (n = 1..Streams, "bench-" by
// default) each hold the topic "bench" with at least PartitionsPerTopic
// partitions; existing ones are reused, so runs against one node
// accumulate data. Producers and consumers are numbered per kind and
// placed round-robin: actor i uses stream i mod Streams and partition
// (i / Streams) mod PartitionsPerTopic. By default there is one stream per
// actor, so producer i and consumer i share a partition. When producers
// run, every consumer's partition must have one (else the consumer could
// never read its quota and the run is refused).
//
// Every actor dials its own connection and logs in before any actor
// starts; then all run at once. A producer sends BatchCount batches of
// MessagesPerBatch messages of MessageSize bytes with PartitionId
// partitioning. Its []wire.Message is built once around one shared payload;
// each batch only restamps ids (producer index in the high half, a
// sequence in the low) and origin timestamps, so the loop allocates
// nothing per message (the SDK encodes into its reused buffer). A consumer
// polls its partition with the Offset strategy from offset 0, count
// MessagesPerBatch (less for the last poll), advancing past the last offset
// served, until it has read BatchCount*MessagesPerBatch messages. An empty
// poll (its producers are behind) is counted apart, waits 1 ms and is not
// recorded as latency.
//
// Warmup runs before each actor measures: producers send batches that are
// not counted (they are extra messages in the partition); consumers poll
// offset 0 without advancing (group members without committing), so the
// measured read still starts at 0; end-to-end actors run unmeasured
// cycles.
//
// # Sizes and rate
//
// TotalSize (ParseSize reads "1GB", "512MiB", ...) replaces BatchCount:
// the total payload is split evenly over the producers (the consumers when
// none produce) and rounded up to whole batches. RateLimit (ParseRate reads
// "100MB/s") caps each actor's sends, warmup included, with
// golang.org/x/time/rate: one batch of burst, each send waits until its
// bytes are due, so the average is the rate whatever the batch size.
//
// # Progress and time series
//
// With Config.Progress set, a line per ProgressInterval (1 s) gives each
// group's messages and MB/s since the start. Every measured request is
// also put in its second (counted from the start, when all actors are
// connected): each group's report carries Series, per second the messages,
// bytes, requests, MB/s, msgs/s and p50/p99 latency (2 significant digits).
// Actors fold their current second into the group once per second, not
// per request. WriteChart turns a Report into a self-contained HTML page
// (inline SVG, no script or network) with throughput and latency over
// time, a dot per point (a run under a second has one point per line) and
// a table of each group's latency percentiles; SVGChart draws one polyline
// per series. Latency is in milliseconds everywhere: console, chart and
// table.
//
// # Figures
//
// Latency is per request: a send from the call to the decoded
// confirmation, a poll from the call to the decoded reply, kept in an
// HdrHistogram (1 ns..10 min, 3 significant digits) per actor and merged
// per kind. Reported: p50, p90, p95, p99, p99.9, p99.99 (the top of the
// percentile's bucket, at most 0.1% above the true value, never above the
// max), and exact min and max. Throughput counts payload bytes only (not
// headers or framing), in decimal MB/s, and messages/s; an actor's rates
// use its own measured span, a group's use the span from the first actor's
// start to the last one's end. Consumers running beside producers include
// the time spent waiting for them; to measure polling alone, produce first
// and then run consumers only (Producers = 0 reads existing data).
//
// # Sink
//
// Sink listens with the node's own client edge (plane/client) and answers
// each frame on the connection's reader goroutine:
//
//   - Register: any credentials; result count 0 + LoginRegisterResponse
//     with a fresh nonzero session (class G of client-plane.md 4.4).
//   - GetClusterMetadata (12): one healthy leader at the sink's address,
//     so the SDK's post-login roster read (7.15) stays put.
//   - PollMessages: min(count, what fits a 64 MiB frame) canned messages
//     of SinkOptions.PollMessageSize bytes, one batch starting at the
//     requested offset (0 for strategies other than Offset), stamped with
//     that base offset, the partition and the time; or the 16-byte empty
//     poll with EmptyPolls. The canned frame is built once per connection
//     and count and restamped in place: safe because clients are lockstep
//     (transports.md 1.3), the next request follows the previous reply.
//   - SendMessages: the batch is not validated (a ceiling, not a server);
//     SendConfirmations with count 1 carrying the numeric stream and topic,
//     the partition, and a per-partition base offset that grows by
//     messages_count (7.18). A storing sink (SinkOptions.StoreDir) first
//     appends the batch bytes as they arrived to the partition's file
//     (StoreFile; os.File.Write under a per-file mutex, f.Sync after each
//     batch with StoreFsync): the least a server that keeps its data does,
//     the storage ceiling. A batch it cannot store is answered S 4010.
//   - CreateStream / CreateTopic: result-framed StreamDetails /
//     TopicDetails under fresh ids, CreateTopic under operation 64 (4.4
//     class C note); nothing is stored but each topic's partition count, so
//     lookups by name keep answering "not found" and setup creates anew.
//   - GetTopic by numeric id of a created topic: its TopicDetails with its
//     partitions (the SDK routes Balanced sends with it); otherwise empty.
//   - CreateConsumerGroup: result-framed ConsumerGroupDetails without
//     members under a fresh id. SyncConsumerGroup: generation 1 and every
//     partition of the topic, as if each member were the only one.
//   - Ping and every other read: status 0, empty body, operation 2. Logout:
//     operation 3, empty. Other replicated requests: success, result count
//     0 when the operation is result-framed (CreatePartitions under 65,
//     DeleteSegments under 68).
//
// Replies echo request, client, cluster, view, release, replica and
// timestamp; a header that fails RequestHeader.Validate gets no reply
// (4.3). Sessions are not enforced: a replicated request before login is
// answered too.
package bench
