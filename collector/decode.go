package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
// pooled buffer of at most MaxBody bytes (f.maxBody).
func (f *fetcher) decode(r *Result) {
	enc, err := codingOf(r.ContentEncoding)
	if len(r.WireBody) == 0 || err == nil && enc == "" {
		r.Body = r.WireBody
		return
	}
	maxBody := f.maxBody(r)
	var zr io.Reader
	if err == nil {
		// The zstd decoder is made once per fetcher with this cap, so it
		// is not this response's: a robots.txt decoded first (its cap
		// List.RobotsMaxBody) left the decoder refusing the windows of
		// common frames and every later page over that size, and
		// robots.txt itself came back empty, taken for a file without
		// rules. readCapped cuts the output at maxBody.
		zr, err = f.dec.reader(enc, r.WireBody, uint64(max(f.col.cfg.MaxBody, zstdWindow))+1)
	}
	if errors.Is(err, errUnknownCoding) {
		r.Body = r.WireBody
		if r.Kind == OK {
			r.Kind, r.Err = BadEncoding, fmt.Errorf("Content-Encoding %q is not one we decode", r.ContentEncoding)
		}
		return
	}
	db := f.col.bufs.get(min(4*len(r.WireBody), int(maxBody)))
	if err == nil {
		var complete bool
		complete, err = f.col.bufs.readCapped(zr, &db, maxBody)
		if err == nil && !complete {
			r.Truncated = true
			if r.Kind == OK {
				r.Kind, r.Err = TooLarge, fmt.Errorf("decoded body over %d bytes: truncated", maxBody)
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

// errUnknownCoding: a content coding we do not decode, or several.
var errUnknownCoding = errors.New("not a content coding we decode")

// codingOf returns the one content coding that v, a Content-Encoding value
// or the values of several such header lines joined by commas, names ("":
// none). Identity and empty members name none; several codings are
// errUnknownCoding, as are a coding we do not know: a server that sends
// "Content-Encoding: gzip" twice compressed twice, and decoding once would
// keep a compressed body as the page.
func codingOf(v string) (string, error) {
	one := ""
	for c := range strings.SplitSeq(v, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if c == "" || c == "identity" {
			continue
		}
		if one != "" {
			return "", errUnknownCoding
		}
		one = c
	}
	return one, nil
}

// reader returns d's decompressor for enc (lower case, not identity) over
// b, reusing the one it made before; zstdMemory, when not 0, caps what a
// zstd frame may make the decoder allocate. The zstd decoder keeps the cap
// of the call that made it: callers pass the same one every time.
func (d *decoders) reader(enc string, b []byte, zstdMemory uint64) (io.Reader, error) {
	d.src.Reset(b)
	var err error
	switch enc {
	case "gzip", "x-gzip":
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.src)
		} else {
			err = d.gz.Reset(&d.src)
		}
		return d.gz, err
	case "deflate":
		// RFC 9110 says zlib; some servers send raw deflate.
		if len(b) >= 2 && b[0]&0x0f == 8 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0 {
			if d.zl == nil {
				d.zl, err = zlib.NewReader(&d.src)
			} else {
				err = d.zl.(zlib.Resetter).Reset(&d.src, nil)
			}
			return d.zl, err
		}
		if d.fl == nil {
			d.fl = flate.NewReader(&d.src)
		} else {
			err = d.fl.(flate.Resetter).Reset(&d.src, nil)
		}
		return d.fl, err
	case "zstd":
		if d.zs == nil {
			opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(zstdWindow)}
			if zstdMemory > 0 {
				opts = append(opts, zstd.WithDecoderMaxMemory(zstdMemory))
			}
			d.zs, err = zstd.NewReader(&d.src, opts...)
		} else {
			err = d.zs.Reset(&d.src)
		}
		return d.zs, err
	}
	return nil, errUnknownCoding
}

// ContentCoding is a response's Content-Encoding as one list: every header
// line of it joined, as a fetch reads it (a body compressed by an
// application and again by a proxy names its codings on two lines). Give
// it to DecodeBody.
func ContentCoding(h http.Header) string {
	return strings.Join(h.Values("Content-Encoding"), ", ")
}

// DecodeBody undoes a stored response's Content-Encoding the way a fetch
// does (gzip, deflate with or without its zlib wrapper, zstd), keeping at
// most max bytes of the decoded body. A stream cut short keeps what
// decoded, as a fetch does; an unknown coding, or a stream of which nothing
// decodes, is an error.
func DecodeBody(coding string, wire []byte, max int64) ([]byte, error) {
	enc, err := codingOf(coding)
	if err == nil && enc == "" {
		return wire, nil
	}
	var d decoders
	var zr io.Reader
	if err == nil {
		zr, err = d.reader(enc, wire, 0)
	}
	if d.zs != nil {
		defer d.zs.Close()
	}
	if errors.Is(err, errUnknownCoding) {
		return nil, fmt.Errorf("Content-Encoding %q is not one we decode", coding)
	}
	if err != nil {
		return nil, fmt.Errorf("%s body: %w", enc, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, max))
	if err != nil && len(out) == 0 {
		return nil, fmt.Errorf("%s body: %w", enc, err)
	}
	return out, nil
}

// kindOf classifies an I/O error of the list's connection.
func (f *fetcher) kindOf(err error) Kind {
	var ne net.Error
	var wl *wireLimitError
	switch {
	case f.ctx.Err() != nil:
		return Canceled
	case errors.As(err, &wl), errors.Is(err, errHeadTooLarge):
		return TooLarge
	case errors.Is(err, syscall.ETIMEDOUT):
		// The kernel gave up on the connection, bytes sent never
		// acknowledged (reuse's ack timeout): gone, as if reset, not a
		// slow answer (ETIMEDOUT is a net.Error Timeout too).
		return Reset
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
