package diag

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"

	"github.com/dsnet/compress/bzip2"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// ZIP compression method ids (PKWARE APPNOTE 4.4.5) for the methods Go's
// archive/zip does not register itself.
const (
	ZipMethodBzip2 uint16 = 12
	ZipMethodLZMA  uint16 = 14
	ZipMethodZstd  uint16 = 93
	ZipMethodXZ    uint16 = 95
)

// zipFlagLZMAEOS is general purpose bit 1, which for method 14 says the
// LZMA stream ends with an end-of-stream marker (APPNOTE 4.4.4).
const zipFlagLZMAEOS uint16 = 0x0002

// zipMethod is how one GET_SNAPSHOT compression code is written: the ZIP
// method id, the general purpose flags it needs and the compressor to
// register for it (nil for the two archive/zip knows).
type zipMethod struct {
	id    uint16
	flags uint16
	comp  zip.Compressor
}

// zipMethods maps the compression codes of server-behaviour.md 10.2 to ZIP
// methods.
var zipMethods = map[Compression]zipMethod{
	CompressionStored:  {id: zip.Store},
	CompressionDeflate: {id: zip.Deflate},
	CompressionBzip2:   {id: ZipMethodBzip2, comp: lazyCompressor(newBzip2Writer)},
	CompressionZstd:    {id: ZipMethodZstd, comp: lazyCompressor(newZstdWriter)},
	CompressionLZMA:    {id: ZipMethodLZMA, flags: zipFlagLZMAEOS, comp: lazyCompressor(newZipLZMAWriter)},
	CompressionXZ:      {id: ZipMethodXZ, comp: lazyCompressor(newXZWriter)},
}

// lazyCompressor delays creating the compressor until the first Write or
// Close. archive/zip calls a Compressor before it writes the entry's local
// header, and some writers (xz) emit their stream header at construction,
// which would land in front of the local header.
func lazyCompressor(newWriter zip.Compressor) zip.Compressor {
	return func(w io.Writer) (io.WriteCloser, error) {
		return &lazyWriter{dst: w, newWriter: newWriter}, nil
	}
}

type lazyWriter struct {
	dst       io.Writer
	newWriter zip.Compressor
	w         io.WriteCloser
}

func (l *lazyWriter) start() error {
	if l.w != nil {
		return nil
	}
	w, err := l.newWriter(l.dst)
	if err != nil {
		return err
	}
	l.w = w
	return nil
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if err := l.start(); err != nil {
		return 0, err
	}
	return l.w.Write(p)
}

func (l *lazyWriter) Close() error {
	if err := l.start(); err != nil {
		return err
	}
	return l.w.Close()
}

func newBzip2Writer(w io.Writer) (io.WriteCloser, error) {
	return bzip2.NewWriter(w, &bzip2.WriterConfig{Level: bzip2.DefaultCompression})
}

// newZstdWriter writes one zstd frame. A single encoder goroutine: the
// snapshot runs on a request path and sections are small.
func newZstdWriter(w io.Writer) (io.WriteCloser, error) {
	return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
}

func newXZWriter(w io.Writer) (io.WriteCloser, error) {
	return xz.NewWriter(w)
}

// zipLZMAVersion is the LZMA SDK version written in front of the
// properties; readers ignore it (APPNOTE 5.8.8).
var zipLZMAVersion = [2]byte{9, 20}

// zipLZMAPropsSize is the size of the LZMA properties that follow the
// 4-byte prefix: the lc/lp/pb byte and the u32 dictionary size.
const zipLZMAPropsSize = 5

// newZipLZMAWriter writes method 14's format (APPNOTE 5.8.8): [SDK version
// major u8][minor u8][properties size u16 LE = 5][5 property bytes], then
// the raw LZMA stream ending with an end-of-stream marker. ulikunitz/xz
// writes the classic .lzma header (5 property bytes and a u64 size), so the
// writer below keeps its properties and drops the size.
func newZipLZMAWriter(w io.Writer) (io.WriteCloser, error) {
	hw := &lzmaHeaderRewriter{w: w}
	lw, err := lzma.WriterConfig{EOSMarker: true}.NewWriter(hw)
	if err != nil {
		return nil, err
	}
	return &zipLZMAWriter{lw: lw, hw: hw}, nil
}

type zipLZMAWriter struct {
	lw *lzma.Writer
	hw *lzmaHeaderRewriter
}

func (z *zipLZMAWriter) Write(p []byte) (int, error) { return z.lw.Write(p) }

func (z *zipLZMAWriter) Close() error {
	if err := z.lw.Close(); err != nil {
		return err
	}
	if len(z.hw.header) < lzma.HeaderLen {
		return errors.New("diag: lzma stream ended inside its header")
	}
	return nil
}

// lzmaHeaderRewriter turns a classic .lzma stream into the ZIP form: it
// collects the 13-byte header, emits the ZIP prefix and the 5 property
// bytes, and passes the rest through.
type lzmaHeaderRewriter struct {
	w      io.Writer
	header []byte
}

func (h *lzmaHeaderRewriter) Write(p []byte) (int, error) {
	n := len(p)
	if need := lzma.HeaderLen - len(h.header); need > 0 {
		take := min(need, len(p))
		h.header = append(h.header, p[:take]...)
		p = p[take:]
		if len(h.header) < lzma.HeaderLen {
			return n, nil
		}
		prefix := []byte{zipLZMAVersion[0], zipLZMAVersion[1], zipLZMAPropsSize, 0}
		prefix = append(prefix, h.header[:zipLZMAPropsSize]...)
		if _, err := h.w.Write(prefix); err != nil {
			return 0, fmt.Errorf("diag: lzma prefix: %w", err)
		}
	}
	if len(p) == 0 {
		return n, nil
	}
	if _, err := h.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}
