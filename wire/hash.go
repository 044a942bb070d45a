package wire

import "github.com/OneOfOne/xxhash"

// Client-plane XXH32 uses (client-plane.md 12.6), seed 0.

// PartitionIndexForKey is the index, in ascending partition-id order, of the
// partition a MessagesKey send goes to: XXH32(seed 0, key) mod partitions
// (14.2). It returns 0 for a topic without partitions, which the caller
// must refuse before routing (S 20 on the server, TopicIdNotFound in SDKs).
func PartitionIndexForKey(key []byte, partitions uint32) uint32 {
	if partitions == 0 {
		return 0
	}
	return xxhash.Checksum32(key) % partitions
}

// ConsumerNameKey is the offset-table key of a plain consumer named by a
// string identifier: XXH32(seed 0, UTF-8 name bytes) (2.3).
func ConsumerNameKey(name string) uint32 { return xxhash.ChecksumString32(name) }

// ConsumerKey is the offset-table key of a plain consumer (kind 1): its
// numeric id, or the hash of its name (2.3). Group consumers are keyed by
// the resolved group id instead, which takes the topic's group table.
func ConsumerKey(id Identifier) uint32 {
	if id.Kind == IDNumeric {
		return id.Num
	}
	return ConsumerNameKey(id.Str)
}
