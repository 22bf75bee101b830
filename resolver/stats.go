package resolver

import "sync/atomic"

// Stats counts what a Resolver did since it was created.
type Stats struct {
	Lookups      int64 // lookups that missed the cache and were resolved
	Hits         int64 // lookups answered from the cache (positive or negative)
	Queries      int64 // queries sent over UDP
	Timeouts     int64 // queries a server did not answer in time
	TCPFallbacks int64 // truncated UDP answers repeated over TCP
	ServersDown  int64 // times a server was marked down

	// Replies dropped, by reason. A dropped reply never reaches the cache;
	// the query keeps waiting for the genuine answer.
	RejectedUnsolicited int64 // id of no query in flight on that socket
	RejectedSource      int64 // from another address or port than the query went to
	RejectedMalformed   int64 // does not parse as a DNS message
	RejectedQuestion    int64 // not a response, or to another question
}

// Rejected is the sum of all rejected replies.
func (s Stats) Rejected() int64 {
	return s.RejectedUnsolicited + s.RejectedSource + s.RejectedMalformed + s.RejectedQuestion
}

type counters struct {
	Lookups, Hits, Queries, Timeouts, TCPFallbacks, ServersDown              atomic.Int64
	RejectedUnsolicited, RejectedSource, RejectedMalformed, RejectedQuestion atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Lookups:             c.Lookups.Load(),
		Hits:                c.Hits.Load(),
		Queries:             c.Queries.Load(),
		Timeouts:            c.Timeouts.Load(),
		TCPFallbacks:        c.TCPFallbacks.Load(),
		ServersDown:         c.ServersDown.Load(),
		RejectedUnsolicited: c.RejectedUnsolicited.Load(),
		RejectedSource:      c.RejectedSource.Load(),
		RejectedMalformed:   c.RejectedMalformed.Load(),
		RejectedQuestion:    c.RejectedQuestion.Load(),
	}
}
