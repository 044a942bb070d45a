package storage

import "encoding/binary"

// Key scheme (doc.go, "Keys"). Integers in keys are big-endian so that
// badger's byte order is numeric order.
const (
	nsGroup = 'G' // 'G' group u64 kind ...: everything a consensus group owns
	nsKV    = 'K' // 'K' name: the generic small key/value space

	kindFloor      = 'F' // the first retained batch offset (batches live in files)
	kindPrepare    = 'J' // + op u64
	kindOffset     = 'O' // + consumer kind u8 + consumer key u32
	kindSnapshot   = 'P'
	kindSuperblock = 'S'

	groupPrefixLen = 1 + 8     // 'G' group
	kindPrefixLen  = 1 + 8 + 1 // 'G' group kind
	u64KeyLen      = kindPrefixLen + 8
	offsetKeyLen   = kindPrefixLen + 1 + 4

	// maxKVNameLen keeps 'K'+name under badger's 65000-byte key bound.
	maxKVNameLen = 60000
)

func groupPrefix(group uint64) []byte {
	k := make([]byte, groupPrefixLen)
	k[0] = nsGroup
	binary.BigEndian.PutUint64(k[1:], group)
	return k
}

func kindPrefix(group uint64, kind byte) []byte {
	return appendKindPrefix(make([]byte, 0, u64KeyLen), group, kind)
}

func appendKindPrefix(b []byte, group uint64, kind byte) []byte {
	b = append(b, nsGroup)
	b = binary.BigEndian.AppendUint64(b, group)
	return append(b, kind)
}

// u64Key is 'G' group kind n: a journal op.
func u64Key(group uint64, kind byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(appendKindPrefix(make([]byte, 0, u64KeyLen), group, kind), n)
}

func keyU64(key []byte) uint64 { return binary.BigEndian.Uint64(key[kindPrefixLen:]) }

func offsetKey(group uint64, kind uint8, consumer uint32) []byte {
	b := appendKindPrefix(make([]byte, 0, offsetKeyLen), group, kindOffset)
	b = append(b, kind)
	return binary.BigEndian.AppendUint32(b, consumer)
}

func kvKey(name string) []byte {
	return append(append(make([]byte, 0, 1+len(name)), nsKV), name...)
}
