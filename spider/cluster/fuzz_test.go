package cluster

import (
	"slices"
	"testing"
	"time"
)

// FuzzControl: any bytes given to the control decoders decode or fail,
// never panic, and what decodes encodes back to an equal message.
func FuzzControl(f *testing.F) {
	c := testConfig()
	f.Add(EncodeHello(Hello{Want: true, Fields: c.Canonical(), Epoch: 9, Fresh: true, Sent: time.Unix(1767225600, 5), Over: true}, 7))
	f.Add(EncodeState(3, 0, State{Idle: true, Gen: 9}))
	f.Add(EncodeState(3, 1<<40, State{Idle: true, Gen: 9, Epoch: 1 << 41}))
	f.Add(EncodeProbe(300, 1<<40))
	f.Add(EncodeRound(300))
	f.Add(EncodeFinished(300, 1<<40))
	f.Add(EncodeBye(300, 1<<40))
	f.Add([]byte("kspider-hello 1 0000000000000000 0\nphases=4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := DecodeHello(b); err == nil {
			again, err := DecodeHello(EncodeHello(h, 1))
			if err != nil || again.Want != h.Want || !slices.Equal(again.Fields, h.Fields) || !again.Sent.Equal(h.Sent) || again.Fresh != h.Fresh || again.Epoch != h.Epoch || again.Over != h.Over {
				t.Fatalf("hello %q: round trip %+v %v", b, again, err)
			}
			Diff(c.Canonical(), h.Fields)
		}
		if r, ep, s, err := DecodeState(b); err == nil {
			if r2, ep2, s2, err := DecodeState(EncodeState(r, ep, s)); err != nil || r2 != r || ep2 != ep || s2 != s {
				t.Fatalf("state %x: round trip %d %d %+v %v", b, r2, ep2, s2, err)
			}
		}
		if r, ep, err := DecodeProbe(b); err == nil {
			again := EncodeProbe(r, ep)
			if ep == 0 {
				again = EncodeRound(r) // protocol 4's
			}
			if r2, ep2, err := DecodeProbe(again); err != nil || r2 != r || ep2 != ep {
				t.Fatalf("probe %x: round trip %d %d %v", b, r2, ep2, err)
			}
		}
		if r, err := DecodeRound(b); err == nil {
			if r2, err := DecodeRound(EncodeRound(r)); err != nil || r2 != r {
				t.Fatalf("round %x: %d %v", b, r2, err)
			}
		}
		if r, ep, err := DecodeFinished(b); err == nil {
			again := EncodeFinished(r, ep)
			if ep == 0 {
				again = EncodeRound(r) // protocol 2's
			}
			if r2, ep2, err := DecodeFinished(again); err != nil || r2 != r || ep2 != ep {
				t.Fatalf("finished %x: round trip %d %d %v", b, r2, ep2, err)
			}
		}
		if r, ep, err := DecodeBye(b); err == nil {
			again := EncodeBye(r, ep)
			if ep == 0 {
				again = EncodeRound(r) // protocol 3's
			}
			if r2, ep2, err := DecodeBye(again); err != nil || r2 != r || ep2 != ep {
				t.Fatalf("bye %x: round trip %d %d %v", b, r2, ep2, err)
			}
		}
		if fs, err := DecodeFields(b); err == nil {
			if again, err := DecodeFields(EncodeFields(nil, fs)); err != nil || !slices.Equal(again, fs) {
				t.Fatalf("fields %q: round trip %v %v", b, again, err)
			}
		}
	})
}
