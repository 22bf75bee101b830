package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// acceptEncoding is what we decode, and so what requests ask for.
const acceptEncoding = "gzip, deflate, zstd"

// zstdWindow caps the window a zstd frame may ask for: RFC 8878 lets a
// decoder refuse windows over 8 MiB, and a frame that declares a larger one
// would otherwise cost that much memory before a byte is decoded.
const zstdWindow = 8 << 20

// decoders are a fetcher's reusable decompressors.
type decoders struct {
	src bytes.Reader
	gz  *gzip.Reader
	zl  io.ReadCloser
	fl  io.ReadCloser
	zs  *zstd.Decoder
}

// decode sets r.Body from r.WireBody, inflating gzip, deflate and zstd into a
// pooled buffer of at most MaxBody bytes.
func (f *fetcher) decode(r *Result) {
	enc := strings.ToLower(strings.TrimSpace(r.ContentEncoding))
	if enc == "" || enc == "identity" || len(r.WireBody) == 0 {
		r.Body = r.WireBody
		return
	}
	d := &f.dec
	d.src.Reset(r.WireBody)
	var zr io.Reader
	var err error
	switch enc {
	case "gzip", "x-gzip":
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.src)
		} else {
			err = d.gz.Reset(&d.src)
		}
		zr = d.gz
	case "deflate":
		// RFC 9110 says zlib; some servers send raw deflate.
		if b := r.WireBody; len(b) >= 2 && b[0]&0x0f == 8 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0 {
			if d.zl == nil {
				d.zl, err = zlib.NewReader(&d.src)
			} else {
				err = d.zl.(zlib.Resetter).Reset(&d.src, nil)
			}
			zr = d.zl
		} else {
			if d.fl == nil {
				d.fl = flate.NewReader(&d.src)
			} else {
				err = d.fl.(flate.Resetter).Reset(&d.src, nil)
			}
			zr = d.fl
		}
	case "zstd":
		if d.zs == nil {
			d.zs, err = zstd.NewReader(&d.src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdWindow), zstd.WithDecoderMaxMemory(uint64(f.col.cfg.MaxBody)+1))
		} else {
			err = d.zs.Reset(&d.src)
		}
		zr = d.zs
	default:
		r.Body = r.WireBody
		if r.Kind == OK {
			r.Kind, r.Err = BadEncoding, fmt.Errorf("Content-Encoding %q is not one we decode", r.ContentEncoding)
		}
		return
	}
	db := f.col.bufs.get(min(4*len(r.WireBody), int(f.col.cfg.MaxBody)))
	if err == nil {
		var complete bool
		complete, err = f.col.bufs.readCapped(zr, &db, f.col.cfg.MaxBody)
		if err == nil && !complete {
			r.Truncated = true
			if r.Kind == OK {
				r.Kind, r.Err = TooLarge, fmt.Errorf("decoded body over %d bytes: truncated", f.col.cfg.MaxBody)
			}
		}
	}
	r.bufs[2] = db
	r.Body = *db
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		r.Truncated = true
		if r.Kind == OK {
			r.Kind, r.Err = TooLarge, fmt.Errorf("zstd body: %w", err)
		}
	}
	if err != nil && r.Kind == OK {
		r.Kind, r.Err = BadEncoding, fmt.Errorf("%s body: %w", enc, err)
	}
}

// kindOf classifies an I/O error of the list's connection.
func (f *fetcher) kindOf(err error) Kind {
	var ne net.Error
	switch {
	case f.ctx.Err() != nil:
		return Canceled
	case errors.Is(err, errWireLimit), errors.Is(err, errHeadTooLarge):
		return TooLarge
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNABORTED):
		return Reset
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	}
	return BadResponse
}
