package resolver

// The cache starts small and grows fourfold up to its configured size: a
// crawl of a few hosts keeps a table of a few kilobytes instead of the
// default's megabyte, which its heap carried from the start (and the
// garbage collector's target twice over).
//
// A growth builds the larger table beside the current one while no put
// runs (put holds cache.grow shared, a growth exclusively), copies every
// entry in use into it and then publishes it; lookups meanwhile read the
// current table, which no longer changes, and find what it held. A table
// grows once a quarter of its slots have been filled (at that load a
// bucket of 8 slots overflows about once in 10^4), or sooner when a new
// name's bucket has no free slot, so that below the largest size a name
// evicts no other.

// firstBuckets is the number of buckets a cache starts with (128 slots at
// the default 8 per bucket, 8 KB).
const firstBuckets = 16

// full reports whether a quarter of t's slots have been filled.
func (t *table) full() bool { return t.filled.Load() >= int64(len(t.entries)/4) }

// growFrom replaces t, if it is still the current table, by one four times
// larger (at most c.max buckets) holding the same entries.
func (c *cache) growFrom(t *table) {
	c.grow.Lock()
	defer c.grow.Unlock()
	if c.tab.Load() != t {
		return // another put grew it meanwhile
	}
	nt := c.newTable(min(4*len(t.buckets), c.max))
	for i := range t.entries {
		e := &t.entries[i]
		if e.expires.Load() == 0 {
			continue
		}
		var k key
		k.n = int(e.meta.Load() & 0xff)
		for j := range k.w {
			k.w[j] = e.short[j].Load()
		}
		if k.n > shortName {
			o := e.over.Load()
			if o == nil || !k.fold(c, stringBytes(o.long)) {
				continue
			}
		} else {
			k.hash = hashWords(c.seed0, c.seed1, k.n, k.w[0], k.w[1], k.w[2], k.w[3])
		}
		c.copyInto(nt, &k, e)
	}
	c.tab.Store(nt)
}

// copyInto puts a copy of e, k's entry, in nt (not yet published, so no
// lock): in its preferred slot if free, else the first free one. A table
// four times larger has room; an entry that finds none is dropped, as an
// eviction would have.
func (c *cache) copyInto(nt *table, k *key, e *entry) {
	first, pref := c.place(nt, k.hash)
	for j := 0; j < c.slots; j++ {
		i := pref + j
		if i >= c.slots {
			i -= c.slots
		}
		if nt.entries[first+i].expires.Load() != 0 {
			continue
		}
		ne := c.claim(nt, k.hash, i)
		ne.meta.Store(e.meta.Load())
		ne.addr4.Store(e.addr4.Load())
		for w := range ne.short {
			ne.short[w].Store(e.short[w].Load())
		}
		ne.over.Store(e.over.Load())
		ne.expires.Store(e.expires.Load())
		c.publish(nt, k.hash, i, ne)
		return
	}
}
