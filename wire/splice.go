package wire

// Splice is a run of bytes a frame carries at offset At of its built part,
// written from where the bytes lie instead of copied in: a poll reply
// serves whole cached batches this way (zero copy, partition.PollSpliced),
// and the edge writes the pieces with one writev (plane/client). The
// bytes must not change until the frame is written.
type Splice struct {
	At    int
	Bytes []byte
}

// SplicedLen is the wire length of built with splices.
func SplicedLen(built []byte, splices []Splice) int {
	n := len(built)
	for _, s := range splices {
		n += len(s.Bytes)
	}
	return n
}

// AppendSplicePieces appends the pieces of built with splices in wire
// order: built up to the first splice, its bytes, built up to the next,
// and so on. Splices are in ascending At, each within built.
func AppendSplicePieces(dst [][]byte, built []byte, splices []Splice) [][]byte {
	from := 0
	for _, s := range splices {
		if s.At > from {
			dst = append(dst, built[from:s.At])
		}
		if len(s.Bytes) > 0 {
			dst = append(dst, s.Bytes)
		}
		from = s.At
	}
	if from < len(built) || len(dst) == 0 {
		dst = append(dst, built[from:])
	}
	return dst
}

// JoinSpliced appends the frame built with splices to dst as one
// contiguous run (for carriers that need one buffer).
func JoinSpliced(dst, built []byte, splices []Splice) []byte {
	from := 0
	for _, s := range splices {
		dst = append(dst, built[from:s.At]...)
		dst = append(dst, s.Bytes...)
		from = s.At
	}
	return append(dst, built[from:]...)
}
