package wire

// Keys of the topic option catalog (client-plane.md 10.4), in catalog order.
const (
	OptCompressionAlgorithm         = "compression_algorithm"
	OptMessageExpiry                = "message_expiry"
	OptMaxTopicSize                 = "max_topic_size"
	OptSegmentSize                  = "segment_size"
	OptEnforceFsync                 = "enforce_fsync"
	OptMessagesRequiredToSave       = "messages_required_to_save"
	OptSizeOfMessagesRequiredToSave = "size_of_messages_required_to_save"
	OptPreallocateSegments          = "preallocate_segments"
	// OptReplicationFactor is an extension key of CreateTopic (issue 23;
	// metadata/placement.go): how many nodes hold each partition. It is
	// not in the catalog DescribeOptions answers, nor in the derived block
	// when absent, so a topic that does not send it reads back exactly as
	// on the reference server.
	OptReplicationFactor = "replication_factor"
)

// TopicOptionCatalog returns the topic catalog DescribeOptions answers for
// scope 1 (client-plane.md 10.4, 7.16): the eight keys in catalog order,
// each with its canonical kind, its default in that kind's encoding, and a
// one-sentence description of its accepted forms and bounds (SDKs show it as
// the key's only documentation, so it must not be empty). It returns a
// fresh copy on every call.
func TopicOptionCatalog() OptionCatalog {
	return OptionCatalog{
		{
			Key: OptCompressionAlgorithm, Kind: KindString, Default: []byte("none"),
			Description: "Compression algorithm recorded for the topic: the String none or gzip " +
				"(case-insensitive), or Uint8 1 (none) or 2 (gzip).",
		},
		{
			Key: OptMessageExpiry, Kind: KindUint64, Default: []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
			Description: "Age after which sealed messages expire, as Uint64 microseconds (0 = server default, " +
				"18446744073709551615 = never) or a String: none, unlimited or never_expire (never), " +
				"default or server_default, or a duration such as 7 days of at most 4294967295 seconds.",
		},
		{
			Key: OptMaxTopicSize, Kind: KindUint64, Default: []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
			Description: "Maximum size of the topic in bytes, as Uint64 (0 = server default, " +
				"18446744073709551615 = unlimited) or a String: unlimited, 0, none or server_default, " +
				"or a byte size such as 1 GiB; a set value must be at least the segment size.",
		},
		{
			Key: OptSegmentSize, Kind: KindUint64, Default: []byte{0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00},
			Description: "Size of a partition segment in bytes, as Uint64 or a byte-size String " +
				"(0 = server default of 1 GiB), from 1048576 to 1073741824 and a multiple of 512.",
		},
		{
			Key: OptEnforceFsync, Kind: KindBool, Default: []byte{0x00},
			Description: "Whether every flush of the topic's partitions is synced to disk, as a one-byte " +
				"Bool 0 or 1 or the String true or false.",
		},
		{
			Key: OptMessagesRequiredToSave, Kind: KindUint32, Default: []byte{0x00, 0x04, 0x00, 0x00},
			Description: "Number of buffered messages that triggers a save to disk, as Uint32 or a " +
				"decimal String, from 1 to 16777216.",
		},
		{
			Key: OptSizeOfMessagesRequiredToSave, Kind: KindUint64, Default: []byte{0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00},
			Description: "Buffered bytes that trigger a save to disk, as Uint64 or a byte-size String " +
				"(0 = server default of 1 MiB), at most 1073741824.",
		},
		{
			Key: OptPreallocateSegments, Kind: KindBool, Default: []byte{0x00},
			Description: "Whether each new segment reserves its full size on disk up front, as a one-byte " +
				"Bool 0 or 1 or the String true or false; when true, segment_size times the partition " +
				"count must be at most 68719476736 bytes.",
		},
	}
}
