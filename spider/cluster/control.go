package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Items between nodes are the communicator's (tag, bytes) pairs. A URL
// goes with URLTag(depth, hops) as the tag (0..MaxURLTag): its link depth
// in the low byte, and, for the target of a redirect, the redirects in a
// row that led to it above (without them a chain /r/N -> /r/N+1, its hops
// owned by other nodes, started its count again on each and was crawled
// without end). Protocol 1 sent the depth alone (0..255): its nodes would
// drop the tags above as unknown control, so the hello's block carries
// the protocol ("protocol=2") and nodes of two protocols fetch nothing,
// naming the difference. Tags from TagHello on are control messages of
// this package:
//
//	hello     "kspider-hello 1 NONCE WANT\n" + EncodeFields(Canonical()),
//	          then "epoch_of_sender=E\n" (its communicator epoch),
//	          "fresh=1\n" if its data directory is new in this run, and
//	          "clock=NS\n", its phase clock when it wrote the message (Unix
//	          nanoseconds), and "over=1\n" if the crawl was over before
//	          the sender's run and nothing came since (Hello.Over; a node
//	          built before says nothing, so its peers only wait for it as
//	          before): see Hello. Sent to every peer at start (WANT 1)
//	          and in answer to a hello with WANT 1 (WANT 0); NONCE (16 hex
//	          digits, random per message) keeps the sent-URL cache from
//	          suppressing a resend.
//	probe     uvarint(round) uvarint(epoch_of_sender): the coordinator
//	          asks for a peer's state; the epoch is its communicator epoch
//	          (protocol 4's carried the round alone: DecodeProbe reads it
//	          with epoch 0)
//	state     uvarint(round) idle(1 byte: 0 or 1) uvarint(gen)
//	          uvarint(epoch) uvarint(epoch_of_sender): the answer to
//	          probe round of the coordinator's epoch, echoed, by the
//	          sender's run of epoch_of_sender (State.Epoch); also sent
//	          unasked, with the
//	          round and epoch it last answered busy, by a node that turned
//	          idle since, so that the coordinator need not poll (a state
//	          of no open round is only that news). The epoch keeps a probe
//	          or an answer of the coordinator's run before a restart, sent
//	          again from a spill file, from being taken for an answer to
//	          this run's round of the same number: two such, idle, of a
//	          node busy since, could end the crawl. The sender's epoch
//	          keeps a state of its run before a restart, sent again from
//	          its spill file, from being compared with its new run's (each
//	          run counts gen from 0): see State.Epoch. Protocol 4's carried
//	          neither epoch: DecodeState reads it with both 0, answering no
//	          probe of this build (protocol 5), ignored too
//	finished  uvarint(round) uvarint(epoch_of_sender): the crawl is
//	          over, stop; the epoch is the coordinator's communicator
//	          epoch, so that a "finished" of its run before a restart,
//	          sent again from its spill file, is known for one and
//	          ignored (it had ended peers started since at once, whatever
//	          work their run had). Protocol 2's carried the round alone:
//	          DecodeFinished reads it with epoch 0, of no run of this
//	          build (protocol 3), ignored too
//	bye       uvarint(round) uvarint(epoch): a peer got "finished" of
//	          that round and coordinator epoch, and stops; the echoed
//	          epoch keeps a bye of an earlier run (the peer's answer to a
//	          "finished" of a crawl resumed since, sent again from its
//	          spill file) from counting for this run's "finished" of the
//	          same round. Protocol 3's carried the round alone: DecodeBye
//	          reads it with epoch 0, answering no "finished" of this build
//	          (protocol 4), ignored too
//
// Anything else with a tag above MaxURLTag is counted and dropped.
const (
	MaxURLTag   = 0xffff
	TagHello    = 1 << 20
	TagProbe    = TagHello + 1
	TagState    = TagHello + 2
	TagFinished = TagHello + 3
	TagBye      = TagHello + 4
)

const helloMagic = "kspider-hello 1 "

// Protocol is the meaning of the items' tags, carried in the hello's
// block as "protocol" (protocol 1 did not say; 2 sent "finished" without
// the coordinator's epoch, 3 "bye" without it, 4 probes and states
// without it).
const Protocol = "5"

// URLTag is the tag of a URL at link depth depth (0..255) reached by hops
// redirects in a row.
func URLTag(depth int, hops uint8) uint64 {
	return uint64(hops)<<8 | uint64(uint8(depth))
}

// SplitURLTag is URLTag's inverse, for tags up to MaxURLTag.
func SplitURLTag(tag uint64) (depth int, hops uint8) {
	return int(tag & 0xff), uint8(tag >> 8)
}

// Hello is a hello message.
type Hello struct {
	Want   bool // the sender wants our hello back
	Fields []Field
	// Epoch is the sender's communicator epoch when it wrote the message
	// (0: not said). A hello the sender did not see acknowledged goes
	// again after its restart, from its spill file, under the new epoch:
	// one naming an older epoch than it came under is stale (its block,
	// directory and clock may have changed since) and is ignored.
	Epoch uint64
	// Fresh: the sender's data directory is new in its current run. From
	// a node its peers heard from before, that is a node whose directory
	// was lost, and with it its share of the crawl.
	Fresh bool
	// Sent is the sender's phase clock when it wrote the message (zero if
	// it did not say). A message arrives after it was written, so Sent
	// later than the receiver's clock by more than a guard proves the
	// two clocks disagree by that much: see ClockAhead.
	Sent time.Time
	// Over: the sender knows the cluster's crawl was over before its
	// current run (it heard "finished" then, or a peer said so), and it
	// has had nothing to do since: no URL new to it, no fetch, nothing
	// queued. A node started after the end learns so from its peers
	// rather than wait for rounds that nobody coordinates any more.
	Over bool
}

// The hello lines after the cluster block, in this order, each only when
// it says something: Hello.Epoch, Hello.Fresh, Hello.Sent, Hello.Over.
const (
	epochKey = "epoch_of_sender"
	freshKey = "fresh"
	clockKey = "clock"
	overKey  = "over"
)

// EncodeHello builds hello h; nonce makes each message distinct.
func EncodeHello(h Hello, nonce uint64) []byte {
	b := []byte(helloMagic)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], nonce)
	b = hex.AppendEncode(b, n[:])
	if h.Want {
		b = append(b, " 1\n"...)
	} else {
		b = append(b, " 0\n"...)
	}
	b = EncodeFields(b, h.Fields)
	if h.Epoch != 0 {
		b = EncodeFields(b, []Field{{epochKey, strconv.FormatUint(h.Epoch, 10)}})
	}
	if h.Fresh {
		b = EncodeFields(b, []Field{{freshKey, "1"}})
	}
	if !h.Sent.IsZero() {
		b = EncodeFields(b, []Field{{clockKey, strconv.FormatInt(h.Sent.UnixNano(), 10)}})
	}
	if h.Over {
		b = EncodeFields(b, []Field{{overKey, "1"}})
	}
	return b
}

// DecodeHello reads a hello; bad bytes give an error, never a panic.
func DecodeHello(b []byte) (Hello, error) {
	rest, ok := bytes.CutPrefix(b, []byte(helloMagic))
	if !ok || len(rest) < 19 || rest[16] != ' ' || rest[18] != '\n' || (rest[17] != '0' && rest[17] != '1') {
		return Hello{}, errors.New("cluster: malformed hello")
	}
	if _, err := hex.DecodeString(string(rest[:16])); err != nil {
		return Hello{}, errors.New("cluster: malformed hello nonce")
	}
	fs, err := DecodeFields(rest[19:])
	if err != nil {
		return Hello{}, err
	}
	h := Hello{Want: rest[17] == '1', Fields: fs}
	// last takes the value of the last line if its key is key.
	last := func(key string) (string, bool) {
		k := len(h.Fields) - 1
		if k < 0 || h.Fields[k].Key != key {
			return "", false
		}
		v := h.Fields[k].Value
		h.Fields = h.Fields[:k]
		return v, true
	}
	if v, ok := last(overKey); ok {
		if v != "1" {
			return Hello{}, fmt.Errorf("cluster: hello's over %q is not 1", v)
		}
		h.Over = true
	}
	if v, ok := last(clockKey); ok {
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Hello{}, fmt.Errorf("cluster: hello's clock %q is not Unix nanoseconds", v)
		}
		h.Sent = time.Unix(0, ns)
	}
	if v, ok := last(freshKey); ok {
		if v != "1" {
			return Hello{}, fmt.Errorf("cluster: hello's fresh %q is not 1", v)
		}
		h.Fresh = true
	}
	if v, ok := last(epochKey); ok {
		e, err := strconv.ParseUint(v, 10, 64)
		if err != nil || e == 0 {
			return Hello{}, fmt.Errorf("cluster: hello's epoch %q is not a positive number", v)
		}
		h.Epoch = e
	}
	return h, nil
}

// ClockAhead says how far a hello's sender's phase clock is proven ahead
// of ours (now, when we read it) beyond Guard, or 0. Only that direction
// can be told from one message: one that is late (queued while we were
// down, retransmitted) looks older, never newer. With two nodes' clocks
// more than Guard apart, both may work on one phase at once; the node
// that is behind sees the other's hellos ahead of it.
func ClockAhead(h Hello, now time.Time) time.Duration {
	if h.Sent.IsZero() {
		return 0
	}
	if d := h.Sent.Sub(now); d > Guard {
		return d
	}
	return 0
}

// State is what a node tells the coordinator about itself.
type State struct {
	Idle bool   // nothing to fetch, nothing pending, every item it sent acknowledged
	Gen  uint64 // grows with every batch of URLs it received in its run
	// Epoch is the sender's communicator epoch: the run whose state it
	// is. Gen starts from 0 at each run, so two runs' generations may be
	// equal by chance, and a restart may give a node work (pages fetched
	// again) that no batch received counts: two rounds match only with
	// states of the same runs (Detector). A coordinator takes a state of
	// a run older than the newest it heard of its sender, sent again
	// from a spill file after the restart, for a busy one.
	Epoch uint64
}

// EncodeRound encodes a round alone: protocol 4's probe, 2's "finished",
// 3's "bye".
func EncodeRound(round uint64) []byte { return binary.AppendUvarint(nil, round) }

// EncodeProbe encodes the probe of round, sent by a coordinator of
// communicator epoch epoch.
func EncodeProbe(round, epoch uint64) []byte { return encodeRoundEpoch(round, epoch) }

// DecodeProbe decodes what EncodeProbe wrote, or protocol 4's round alone
// (epoch 0).
func DecodeProbe(b []byte) (round, epoch uint64, err error) {
	return decodeRoundEpoch(b, "probe")
}

// DecodeRound decodes what EncodeRound wrote.
func DecodeRound(b []byte) (uint64, error) {
	r, n := binary.Uvarint(b)
	if n <= 0 || n != len(b) {
		return 0, errors.New("cluster: malformed round number")
	}
	return r, nil
}

// EncodeFinished encodes "finished" of round, sent by a coordinator of
// communicator epoch epoch.
func EncodeFinished(round, epoch uint64) []byte { return encodeRoundEpoch(round, epoch) }

// DecodeFinished decodes what EncodeFinished wrote, or protocol 2's round
// alone (epoch 0).
func DecodeFinished(b []byte) (round, epoch uint64, err error) {
	return decodeRoundEpoch(b, "finished")
}

// EncodeBye encodes a peer's bye to the "finished" of round and epoch.
func EncodeBye(round, epoch uint64) []byte { return encodeRoundEpoch(round, epoch) }

// DecodeBye decodes what EncodeBye wrote, or protocol 3's round alone
// (epoch 0).
func DecodeBye(b []byte) (round, epoch uint64, err error) { return decodeRoundEpoch(b, "bye") }

func encodeRoundEpoch(round, epoch uint64) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, round), epoch)
}

// decodeRoundEpoch decodes a round and a coordinator's epoch, or a round
// alone (epoch 0), as an earlier protocol sent; what names the message.
func decodeRoundEpoch(b []byte, what string) (round, epoch uint64, err error) {
	round, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, fmt.Errorf("cluster: malformed %s", what)
	}
	if n == len(b) {
		return round, 0, nil
	}
	epoch, m := binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) || epoch == 0 {
		return 0, 0, fmt.Errorf("cluster: malformed %s", what)
	}
	return round, epoch, nil
}

// EncodeState encodes a state answer to probe round of a coordinator of
// communicator epoch epoch (0: protocol 4's state, without it or
// s.Epoch).
func EncodeState(round, epoch uint64, s State) []byte {
	b := binary.AppendUvarint(nil, round)
	if s.Idle {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, s.Gen)
	if epoch == 0 {
		return b
	}
	return binary.AppendUvarint(binary.AppendUvarint(b, epoch), s.Epoch)
}

// DecodeState decodes what EncodeState wrote, or protocol 4's state
// without the epochs (epoch and s.Epoch 0).
func DecodeState(b []byte) (round, epoch uint64, s State, err error) {
	bad := errors.New("cluster: malformed state")
	round, n := binary.Uvarint(b)
	if n <= 0 || n >= len(b) || b[n] > 1 {
		return 0, 0, State{}, bad
	}
	s.Idle = b[n] == 1
	n++
	g, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return 0, 0, State{}, bad
	}
	s.Gen, n = g, n+m
	if n == len(b) {
		return round, 0, s, nil
	}
	epoch, m = binary.Uvarint(b[n:])
	if m <= 0 || epoch == 0 {
		return 0, 0, State{}, bad
	}
	n += m
	s.Epoch, m = binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) || s.Epoch == 0 {
		return 0, 0, State{}, bad
	}
	return round, epoch, s, nil
}

// Detector is the coordinator's side of termination detection (see the
// package doc): rounds of probes; the crawl is over when two rounds in a
// row found every node, the coordinator included, idle with the same
// generation counts.
type Detector struct {
	peers   []int
	round   uint64
	open    bool
	own     State
	replies map[int]State
	prev    map[int]State // the last complete round, own state under key -1; nil if not all idle
}

// NewDetector makes the detector of a coordinator whose peers are peers.
func NewDetector(peers []int) *Detector {
	return &Detector{peers: append([]int(nil), peers...)}
}

// Open reports whether a round is waiting for answers.
func (d *Detector) Open() bool { return d.open }

// Round is the current round number.
func (d *Detector) Round() uint64 { return d.round }

// AllIdle reports whether the last complete round found every node idle:
// one more such round with the same generations ends the crawl.
func (d *Detector) AllIdle() bool { return d.prev != nil }

// Start begins a new round with the coordinator's own state and returns
// its number, to be sent in a probe to every peer.
func (d *Detector) Start(own State) uint64 {
	d.round++
	d.open, d.own, d.replies = true, own, make(map[int]State, len(d.peers))
	return d.round
}

// Reply records peer from's answer. When it completes the round, complete
// is true, and over is true if the crawl has ended. Answers to other rounds
// or from unknown peers are ignored.
func (d *Detector) Reply(from int, round uint64, s State) (complete, over bool, err error) {
	if !d.open || round != d.round {
		return false, false, nil
	}
	known := false
	for _, p := range d.peers {
		known = known || p == from
	}
	if !known {
		return false, false, fmt.Errorf("cluster: state from node %d, not a peer", from)
	}
	d.replies[from] = s
	if len(d.replies) < len(d.peers) {
		return false, false, nil
	}
	d.open = false
	all := map[int]State{-1: d.own}
	idle := d.own.Idle
	for p, st := range d.replies {
		all[p] = st
		idle = idle && st.Idle
	}
	if !idle {
		d.prev = nil
		return true, false, nil
	}
	same := d.prev != nil
	for k, st := range all {
		same = same && d.prev[k] == st
	}
	d.prev = all
	return true, same, nil
}
