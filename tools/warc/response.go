package warc

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/kspider/kspider/storage"
)

// PageError reports a stored page that cannot be written as a valid response
// record (a URL that cannot stand in WARC-Target-URI, a status that is not
// three digits). Nothing was written for it; the writer is still usable.
type PageError struct {
	URLID  uint64
	URL    string
	Reason string
}

func (e *PageError) Error() string {
	return fmt.Sprintf("warc: page %d (%q): %s", e.URLID, e.URL, e.Reason)
}

// Response encodes page p as a response record belonging to the warcinfo
// record warcinfoID (empty for none). The member is valid until the next call.
//
// Header lines that would break the HTTP block (no colon, a name that is not
// a token, control characters, a blank line inside the block, a continuation
// line with nothing to continue) are left out, so that archive tools can read
// the record; dropped describes them, for the caller to log. A page that
// cannot be represented at all is a *PageError.
func (e *Encoder) Response(p *storage.Page, warcinfoID string) (member []byte, dropped []string, err error) {
	if err := checkTargetURI(p.URL); err != nil {
		return nil, nil, &PageError{p.URLID, p.URL, err.Error()}
	}
	if p.Status < 100 || p.Status > 999 {
		return nil, nil, &PageError{p.URLID, p.URL, fmt.Sprintf("HTTP status %d is not three digits", p.Status)}
	}
	head, dropped := appendHTTPHead(e.httpHead[:0], p.Status, p.Header, len(p.Body))
	e.httpHead = head

	bh := sha1.New()
	bh.Write(head)
	bh.Write(p.Body)
	var sum [sha1.Size]byte
	blockDigest := "sha1:" + base32.StdEncoding.EncodeToString(bh.Sum(sum[:0]))

	fields := append(e.fields[:0],
		Field{"WARC-Type", TypeResponse},
		Field{"WARC-Record-ID", ResponseRecordID(p.URLID, p.URL, p.FetchTime)},
		Field{"WARC-Date", FormatDate(p.FetchTime)},
		Field{"WARC-Target-URI", targetURI(p.URL)},
	)
	if p.ServerIP.IsValid() {
		fields = append(fields, Field{"WARC-IP-Address", p.ServerIP.Unmap().WithZone("").String()})
	}
	if warcinfoID != "" {
		fields = append(fields, Field{"WARC-Warcinfo-ID", warcinfoID})
	}
	fields = append(fields,
		Field{"WARC-Payload-Digest", SHA1Digest(p.Body)},
		Field{"WARC-Block-Digest", blockDigest},
		Field{"Content-Type", ContentTypeHTTPResponse},
	)
	e.fields = fields
	member, err = e.record(fields, head, p.Body)
	return member, dropped, err
}

// checkTargetURI rejects what cannot stand in a WARC-Target-URI field: an
// empty URI, whitespace or control characters.
func checkTargetURI(u string) error {
	if u == "" {
		return fmt.Errorf("empty URL")
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("URL has a space or control character at byte %d", i)
		}
	}
	return nil
}

// targetURI is u as WARC-Target-URI: a URI, or an IRI in UTF-8, so the
// bytes of u that are not UTF-8 (no crawl stores such a URL: kspider's are
// ASCII; a damaged or foreign store may) are percent-encoded, as RFC 3987
// maps an IRI to a URI. Written raw, they made a header that is neither,
// which readers decode each their own way (warcio: as U+FFFD), the page
// then archived under another URL.
func targetURI(u string) string {
	if utf8.ValidString(u) {
		return u
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(u)+16)
	for i := 0; i < len(u); {
		r, n := utf8.DecodeRuneInString(u[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, '%', hex[u[i]>>4], hex[u[i]&15])
		} else {
			b = append(b, u[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// appendHTTPHead appends the HTTP status line and header block of a response
// whose stored header block is header and whose body is bodyLen bytes, ending
// with the blank line. Transfer-Encoding and a Content-Length that does not
// match bodyLen are renamed (see the package doc); a Content-Length giving
// bodyLen is added unless a matching one is kept. Malformed lines are left
// out and described in dropped.
func appendHTTPHead(b []byte, status int, header []byte, bodyLen int) (_ []byte, dropped []string) {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\n"...)

	keptLength := false
	lastKept := -1 // the number of the last field line written
	for lineNo := 1; len(header) > 0; lineNo++ {
		var line []byte
		if i := bytes.IndexByte(header, '\n'); i >= 0 {
			line, header = header[:i], header[i+1:]
		} else {
			line, header = header, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if len(bytes.TrimSpace(header)) > 0 {
				dropped = append(dropped, fmt.Sprintf("header line %d: blank line inside the header block", lineNo))
			}
			continue
		}
		if err := checkHeaderBytes(line); err != nil {
			dropped = append(dropped, fmt.Sprintf("header line %d: %v: %q", lineNo, err, clip(line)))
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if lastKept != lineNo-1 {
				dropped = append(dropped, fmt.Sprintf("header line %d: continuation of no field: %q", lineNo, clip(line)))
				continue
			}
			lastKept = lineNo
			b = append(b, line...) // obs-fold: belongs to the field before, renamed or not
			b = append(b, "\r\n"...)
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			dropped = append(dropped, fmt.Sprintf("header line %d: not \"Name: value\": %q", lineNo, clip(line)))
			continue
		}
		lastKept = lineNo
		name, value := line[:colon], line[colon+1:]
		switch {
		case asciiEqualFold(name, "Transfer-Encoding"):
			b = append(b, "X-Crawler-Transfer-Encoding:"...)
			b = append(b, value...)
		case asciiEqualFold(name, "Content-Length"):
			if !keptLength && string(bytes.Trim(value, " \t")) == strconv.Itoa(bodyLen) {
				keptLength = true
				b = append(b, line...)
			} else {
				b = append(b, "X-Crawler-Content-Length:"...)
				b = append(b, value...)
			}
		default:
			b = append(b, line...)
		}
		b = append(b, "\r\n"...)
	}
	if !keptLength {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(bodyLen), 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...), dropped
}

// checkHeaderBytes rejects control characters other than horizontal tab,
// which would let a stored header break the record's framing.
func checkHeaderBytes(line []byte) error {
	for i, c := range line {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Errorf("control character %#02x at byte %d", c, i)
		}
	}
	return nil
}

func isToken(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return len(b) > 0
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func clip(b []byte) []byte {
	if len(b) > 60 {
		return b[:60]
	}
	return b
}
