package testweb

import "math"

// Everything in the web is derived from hashes of (seed, what, where), never
// from a shared random stream, so any page can be generated alone, in any
// order, and still come out byte-identical.

// mix is the splitmix64 finaliser: a cheap, well-distributed 64-bit mix.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// key combines values into one hash.
func key(parts ...uint64) uint64 {
	h := uint64(0x6a09e667f3bcc908)
	for _, p := range parts {
		h = mix(h ^ p)
	}
	return h
}

// strKey hashes a string (FNV-1a, then mixed).
func strKey(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix(h)
}

// rng is a small deterministic generator seeded from a key.
type rng struct{ s uint64 }

func newRng(k uint64) rng { return rng{s: k} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// intn returns a value in [0, n); n <= 0 gives 0.
func (r *rng) intn(n int) int {
	if n <= 0 {
		return 0
	}
	return int(r.next() % uint64(n))
}

// float returns a value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// chance reports true with probability p.
func (r *rng) chance(p float64) bool { return r.float() < p }

// normal returns a standard normal variate (Box-Muller).
func (r *rng) normal() float64 {
	u1 := r.float()
	if u1 < 1e-12 {
		u1 = 1e-12
	}
	u2 := r.float()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// zipfIndex returns an index in [0, n) with probability roughly proportional
// to 1/(i+1): the log-uniform draw of a Zipf law with exponent 1.
func (r *rng) zipfIndex(n int) int {
	if n <= 1 {
		return 0
	}
	i := int(math.Exp(r.float()*math.Log(float64(n)+1))) - 1
	if i >= n {
		i = n - 1
	}
	if i < 0 {
		i = 0
	}
	return i
}

// pick returns one element of a list.
func pick[T any](r *rng, list []T) T { return list[r.intn(len(list))] }
