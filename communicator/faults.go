package communicator

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
)

// write sends one datagram to p through the hook, if any. The counters
// count it as sent even if the hook then loses it, as the network would.
func (e *Endpoint) write(b []byte, p *peer) {
	e.ctr.sentDatagrams.Add(1)
	e.ctr.sentBytes.Add(uint64(len(b)))
	if e.cfg.Hook != nil {
		e.cfg.Hook(b, p.addr, func(b []byte) { e.writeRaw(b, p) })
		return
	}
	e.writeRaw(b, p)
}

func (e *Endpoint) writeRaw(b []byte, p *peer) {
	if _, err := e.conn.WriteToUDPAddrPort(b, p.addr); err != nil {
		e.ctr.sendErrors.Add(1)
		// A tick under way when Close closes the socket is no news.
		if !errors.Is(err, net.ErrClosed) && p.sendErrLogged.CompareAndSwap(false, true) {
			// Once per peer: it may fail for every datagram (a peer
			// address the socket cannot reach, a path MTU below Payload),
			// and the count is in the stats; without this line the
			// peer just looks down.
			e.cfg.Logf("communicator: sending to node %d (%v): %v (counted as send errors; said once)", p.id, p.addr, err)
		}
	}
}

// Faults returns a WireHook that loses a fraction loss of datagrams,
// sends a fraction dup twice and holds back a fraction reorder until the
// next datagram has gone, deterministically from seed.
func Faults(loss, dup, reorder float64, seed uint64) WireHook {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, 0x6b737064))
	var held []byte
	var heldSend func([]byte)
	return func(b []byte, to netip.AddrPort, send func([]byte)) {
		mu.Lock()
		x, y, z := r.Float64(), r.Float64(), r.Float64()
		var release []byte
		var releaseSend func([]byte)
		if held != nil {
			release, releaseSend, held = held, heldSend, nil
		}
		keep := false
		if x >= loss && z < reorder && release == nil {
			held, heldSend, keep = append([]byte(nil), b...), send, true
		}
		mu.Unlock()
		if x >= loss && !keep {
			send(b)
			if y < dup {
				send(b)
			}
		}
		if release != nil {
			releaseSend(release)
		}
	}
}
