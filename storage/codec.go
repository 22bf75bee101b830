package storage

import (
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Codec is how a record's body is compressed; it is stored in every record.
type Codec uint8

// The codecs. Their numbers are part of the on-disk format.
const (
	CodecNone Codec = 0
	CodecLZO  Codec = 1 // LZO1X-1, the thesis's choice and the default
	CodecS2   Codec = 2
	CodecZstd Codec = 3 // zstd at its fastest level
)

var codecNames = [...]string{CodecNone: "none", CodecLZO: "lzo", CodecS2: "s2", CodecZstd: "zstd"}

func (c Codec) valid() bool { return int(c) < len(codecNames) }

func (c Codec) String() string {
	if !c.valid() {
		return fmt.Sprintf("codec(%d)", uint8(c))
	}
	return codecNames[c]
}

// ParseCodec maps a Config.Codec name to its Codec; "" is LZO.
func ParseCodec(name string) (Codec, error) {
	if name == "" {
		return CodecLZO, nil
	}
	for c, n := range codecNames {
		if n == name {
			return Codec(c), nil
		}
	}
	return 0, fmt.Errorf("storage: unknown codec %q (want lzo, s2, zstd or none)", name)
}

// Codecs lists the codec names in on-disk order.
func Codecs() []string { return append([]string(nil), codecNames[:]...) }

// encoder compresses bodies for one compressor goroutine, reusing its state
// from record to record.
type encoder struct {
	codec   Codec
	lzo     *lzoCompressor
	zstd    *zstd.Encoder
	scratch []byte // the record being encoded (Store.compress)
}

func newEncoder(c Codec) (*encoder, error) {
	e := &encoder{codec: c}
	if c == CodecLZO {
		e.lzo = new(lzoCompressor)
	}
	if c == CodecZstd {
		z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil, fmt.Errorf("storage: zstd encoder: %w", err)
		}
		e.zstd = z
	}
	return e, nil
}

// appendEncoded appends src compressed to dst.
func (e *encoder) appendEncoded(dst, src []byte) []byte {
	switch e.codec {
	case CodecLZO:
		return e.lzo.appendCompress(dst, src)
	case CodecS2:
		n := len(dst)
		need := s2.MaxEncodedLen(len(src))
		dst = grow(dst, need)
		out := s2.Encode(dst[n:n+need], src)
		return dst[:n+len(out)]
	case CodecZstd:
		return e.zstd.EncodeAll(src, dst)
	}
	return append(dst, src...)
}

func (e *encoder) close() {
	if e.zstd != nil {
		e.zstd.Close()
	}
}

// grow makes room for n more bytes after len(b).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+len(b)/4)
		copy(nb, b)
		b = nb
	}
	return b
}

// decoder decompresses bodies for one reading goroutine.
type decoder struct {
	zstd *zstd.Decoder
}

func (d *decoder) close() {
	if d.zstd != nil {
		d.zstd.Close()
	}
}

// decode appends src, decompressed with codec c, to dst and checks that it
// yields exactly rawLen bytes. Corrupt input is an error, never a panic.
func (d *decoder) decode(c Codec, dst, src []byte, rawLen int) (out []byte, err error) {
	n := len(dst)
	switch c {
	case CodecNone:
		out = append(dst, src...)
	case CodecS2:
		l, err := s2.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		if l != rawLen {
			return nil, fmt.Errorf("decodes to %d bytes, header says %d", l, rawLen)
		}
		dst = grow(dst, l)
		b, err := s2.Decode(dst[n:n+l], src)
		if err != nil {
			return nil, err
		}
		out = dst[:n+len(b)]
	case CodecZstd:
		if d.zstd == nil {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxRecordSize))
			if err != nil {
				return nil, err
			}
			d.zstd = z
		}
		out, err = d.zstd.DecodeAll(src, dst)
		if err != nil {
			return nil, err
		}
	case CodecLZO:
		if out, err = lzoDecompress(dst, src, rawLen); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown codec %d", c)
	}
	if len(out)-n != rawLen {
		return nil, fmt.Errorf("decodes to %d bytes, header says %d", len(out)-n, rawLen)
	}
	return out, nil
}
