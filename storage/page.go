package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"time"
)

// Page is one fetched page as the collector hands it to storage and as the
// offline tools read it back. It is the contract between the crawl and every
// reader of a store (stats, WARC export, get).
type Page struct {
	URLID     uint64        // the URL's id in the node's URL tree
	URL       string        // the canonical URL that was fetched
	FetchTime time.Time     // when the request was sent (UTC, stored to the nanosecond)
	Duration  time.Duration // from sending the request to the end of the body
	Status    int           // HTTP status code
	// Header is the response header block as received: "Name: value" lines
	// ending in CRLF, without the status line and without the blank line.
	Header   []byte
	ServerIP netip.Addr // the address the page came from (invalid if unknown)
	Body     []byte     // the response body, decoded of transfer encoding only
}

// ParseHeader parses p.Header into an http.Header. A malformed header block is
// an error naming the page; stored bytes are returned as they are otherwise.
func (p *Page) ParseHeader() (http.Header, error) {
	if len(p.Header) == 0 {
		return http.Header{}, nil
	}
	block := p.Header
	if !bytes.HasSuffix(block, []byte("\r\n")) {
		block = append(block[:len(block):len(block)], '\r', '\n')
	}
	block = append(block[:len(block):len(block)], '\r', '\n')
	h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(block))).ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("storage: page %d (%s): bad header block: %w", p.URLID, p.URL, err)
	}
	return http.Header(h), nil
}
