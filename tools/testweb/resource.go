package testweb

// Non-HTML resources: a magic number a sniffer recognises, then filler bytes.

var resourceMagic = [][]byte{
	{0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 'J', 'F', 'I', 'F', 0},
	[]byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"),
	{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'},
	[]byte("/* stylesheet */\nbody { font-family: Tahoma, sans-serif; }\n"),
	[]byte("/* script */\n'use strict';\n"),
}

// resourceSizes are the size ranges [min, max) per kind.
var resourceSizes = [][2]int{{5000, 200000}, {20000, 500000}, {1000, 50000}, {2000, 20000}, {5000, 100000}}

func resourceSize(h *Host, j int) int {
	r := newRng(key(h.key, 50, uint64(j)))
	s := resourceSizes[j%len(resourceSizes)]
	// Skewed towards the small end.
	f := r.float()
	return s[0] + int(f*f*float64(s[1]-s[0]))
}

func (w *Web) appendResource(dst []byte, h *Host, j int) []byte {
	r := newRng(key(h.key, 51, uint64(j)))
	size := resourceSize(h, j)
	magic := resourceMagic[j%len(resourceMagic)]
	dst = append(dst, magic...)
	return appendText(dst, w.filler.tis, size-len(magic), &r)
}
