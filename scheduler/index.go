package scheduler

import "hash/maphash"

// hostIndex maps host names to host numbers: open addressing with linear
// probing, 4–8 bytes per host, rebuilt at Open.
//
// The slot is a keyed hash of the name (maphash, a seed drawn per index),
// not HostHash: that one is fixed for every node and run, so a hostile web
// naming its hosts could pick names whose HostHash ends in the same bits
// (a few thousand tries each), all taking one run of slots, and every
// insert and lookup walked the run: quadratic in the hosts it named. With
// a seed nobody outside the process knows, the names spread as random ones
// do. The index lives in memory only, so the seed is never stored.
type hostIndex struct {
	seed  maphash.Seed
	slots []uint32 // host number + 1; 0 = empty
	n     int
}

func (x *hostIndex) mask() uint64 { return uint64(len(x.slots) - 1) }

func (x *hostIndex) home(name string) uint64 { return maphash.String(x.seed, name) & x.mask() }

// find returns the number of the host named name.
func (x *hostIndex) find(name string, names []string) (uint32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	m := x.mask()
	for i := x.home(name); ; i = (i + 1) & m {
		v := x.slots[i]
		if v == 0 {
			return 0, false
		}
		if h := v - 1; names[h] == name {
			return h, true
		}
	}
}

// insert adds host num (not yet present); names gives every host's name
// for a rehash.
func (x *hostIndex) insert(num uint32, names []string) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(max(1024, 2*len(x.slots)), names)
	}
	x.put(num, names[num])
	x.n++
}

func (x *hostIndex) put(num uint32, name string) {
	m := x.mask()
	i := x.home(name)
	for x.slots[i] != 0 {
		i = (i + 1) & m
	}
	x.slots[i] = num + 1
}

func (x *hostIndex) grow(size int, names []string) {
	if len(x.slots) == 0 {
		x.seed = maphash.MakeSeed()
	}
	old := x.slots
	x.slots = make([]uint32, size)
	for _, v := range old {
		if v != 0 {
			x.put(v-1, names[v-1])
		}
	}
}

// size returns the bytes the index holds.
func (x *hostIndex) size() int { return 4 * len(x.slots) }
