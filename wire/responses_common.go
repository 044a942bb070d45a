package wire

// Shared plumbing of the response payload codecs (client-plane.md 7 and 8).
//
// Choices where the spec is silent:
//   - A response that is one structure (StreamDetails, Stats, ConsumerOffset,
//     ...) must fill the body exactly: trailing bytes are malformed. The one
//     exception is ClusterMetadata, whose trailing bytes are ignored as the
//     Go SDK does (7.15).
//   - Lists "to the end of the body" (Streams, Users, Clients, ...) decode an
//     empty body as an empty list; a partial element at the end is malformed.
//   - A detail type (StreamDetails, TopicDetails, ConsumerGroupDetails,
//     ClientDetails) encodes its count field from the length of its list, so
//     an encoder can never write a body whose count and entries disagree.
//   - Decoded empty lists and empty byte fields are nil, so a decoded value
//     compares equal to the value it was encoded from.

// Minimum encoded sizes, used to bound counts before allocating.
const (
	minTopicHeaderSize         = 50 + 1 + 4 + 4      // name of 1 byte, empty blocks
	partitionResponseSize      = 40                  // 7.4
	minConsumerGroupMemberSize = 8                   // no partitions
	consumerGroupInfoSize      = 12                  // 7.10
	cacheMetricSize            = 32                  // 7.14
	statsPrefixSize            = 108                 // 7.14: the fixed numeric prefix
	minClusterNodeSize         = 4 + 4 + 4*2 + 1 + 1 // empty name and ip
	minOptionDescriptorSize    = 2 + 1 + 4 + 4       // key of 1 byte, no default, no text
)

// respFitCount checks that n elements of at least minSize bytes each can still
// fit in the input, like Count does for a count this reader has just read as
// part of a structure (topics_count inside a StreamResponse, ...). It returns
// 0 after recording a failure.
func (r *Reader) respFitCount(field string, n uint32, minSize int) int {
	if r.err != nil {
		return 0
	}
	if uint64(n)*uint64(minSize) > uint64(r.Len()) {
		r.Fail(field, "count exceeds input")
		return 0
	}
	return int(n)
}

// respFailWith records an error produced by a nested decoder.
func (r *Reader) respFailWith(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
}

// respDecode decodes body into a fresh T with read and stores it in dst only
// on success, so a failed Decode leaves the receiver untouched.
func respDecode[T any](dst *T, body []byte, what string, exact bool, read func(*T, *Reader)) error {
	var v T
	if err := decodeWith(body, exact, what, func(r *Reader) { read(&v, r) }); err != nil {
		return err
	}
	*dst = v
	return nil
}

// respReadToEnd reads elements with read until the input is exhausted (lists
// "to the end of the body" without a count).
func respReadToEnd[T any](r *Reader, read func(*T, *Reader)) []T {
	var out []T
	for r.Len() > 0 && r.err == nil {
		var v T
		read(&v, r)
		out = append(out, v)
	}
	return out
}

// respReadN reads n elements with read, stopping at the first failure. The
// caller has bounded n by the input (Count or respFitCount).
func respReadN[T any](r *Reader, n int, read func(*T, *Reader)) []T {
	if n == 0 || r.err != nil {
		return nil
	}
	out := make([]T, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		var v T
		read(&v, r)
		out = append(out, v)
	}
	return out
}

// respCopyBytes copies b out of the input; empty becomes nil.
func respCopyBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
