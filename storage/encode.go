package storage

import (
	"context"
	"errors"
	"sync/atomic"
)

// Encoded is a page compressed into its record by Store.Encode, not yet
// handed to the savers (Store.PutEncoded). It holds no reference to the
// page. The zero Encoded is not a record; one never put is simply dropped.
type Encoded struct {
	r *record
}

// encoders lends encoders to Encode's callers: at most Config.Compressors
// of them, made on first need, beside the compressor goroutines' own.
type encoders struct {
	codec Codec
	spare chan *encoder
	made  atomic.Int32
}

// take returns a free encoder, making one while fewer than cap(spare)
// exist, else waiting for one.
func (e *encoders) take() (*encoder, error) {
	select {
	case enc := <-e.spare:
		return enc, nil
	default:
	}
	if e.made.Add(1) <= int32(cap(e.spare)) {
		enc, err := newEncoder(e.codec)
		if err != nil {
			e.made.Add(-1)
		}
		return enc, err
	}
	e.made.Add(-1)
	return <-e.spare, nil
}

func (e *encoders) give(enc *encoder) { e.spare <- enc }

// closeAll closes the spare encoders; none may be lent out.
func (e *encoders) closeAll() {
	for {
		select {
		case enc := <-e.spare:
			enc.close()
		default:
			return
		}
	}
}

// Encode compresses p into its record now, on the caller's goroutine, and
// returns it without storing it: the caller may reuse p's buffers as soon
// as Encode returns, and hands the record to the savers with PutEncoded
// when it may be stored. A caller that must hold pages back before storing
// them (the spider node waits until a page's links are durable) keeps the
// compressed record meanwhile instead of the page, a third or less of its
// bytes: crawling the PostgreSQL documentation, the pages waiting for
// that sync were most of the node's heap.
func (s *Store) Encode(p *Page) (Encoded, error) {
	if err := s.checkPut(p); err != nil {
		return Encoded{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Encoded{}, ErrClosed
	}
	enc, err := s.lend.take()
	if err != nil {
		return Encoded{}, err
	}
	r := s.newRecord()
	s.encodeRecord(enc, p, r)
	s.lend.give(enc)
	return Encoded{r: r}, nil
}

// Len is the record's size in bytes (0 for a zero Encoded).
func (e Encoded) Len() int {
	if e.r == nil {
		return 0
	}
	return len(e.r.buf)
}

// PutEncoded hands a record made by Encode to the savers, as Put does a
// page (blocking while they are behind, the same errors); e must not be
// used again, whatever PutEncoded returns.
func (s *Store) PutEncoded(ctx context.Context, e Encoded) error {
	if e.r == nil {
		return errors.New("storage: PutEncoded of a zero Encoded")
	}
	return enqueue(s, ctx, s.compressed, e.r)
}
