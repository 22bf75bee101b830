package scheduler

// hostIndex maps host names to host numbers: open addressing with linear
// probing over the hashes the host table keeps anyway, so it costs 4–8
// bytes per host and is rebuilt at Open without hashing a name twice.
type hostIndex struct {
	slots []uint32 // host number + 1; 0 = empty
	n     int
}

func (x *hostIndex) mask() uint64 { return uint64(len(x.slots) - 1) }

// find returns the number of the host named name (hash = HostHash(name)).
func (x *hostIndex) find(hash uint64, name string, hosts []hostRec, names []string) (uint32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	m := x.mask()
	for i := hash & m; ; i = (i + 1) & m {
		v := x.slots[i]
		if v == 0 {
			return 0, false
		}
		if h := v - 1; hosts[h].hash == hash && names[h] == name {
			return h, true
		}
	}
}

// insert adds host num (not yet present); hosts gives every host's hash
// for a rehash.
func (x *hostIndex) insert(num uint32, hosts []hostRec) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(max(1024, 2*len(x.slots)), hosts)
	}
	x.put(num, hosts[num].hash)
	x.n++
}

func (x *hostIndex) put(num uint32, hash uint64) {
	m := x.mask()
	i := hash & m
	for x.slots[i] != 0 {
		i = (i + 1) & m
	}
	x.slots[i] = num + 1
}

func (x *hostIndex) grow(size int, hosts []hostRec) {
	old := x.slots
	x.slots = make([]uint32, size)
	for _, v := range old {
		if v != 0 {
			x.put(v-1, hosts[v-1].hash)
		}
	}
}

// size returns the bytes the index holds.
func (x *hostIndex) size() int { return 4 * len(x.slots) }
