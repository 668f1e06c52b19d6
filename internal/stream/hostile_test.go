package stream

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// invariants checks the engine's internal consistency.
func (e *Endpoint) invariants() error {
	if d := seqno.Offset(e.sndLastAck(), e.snd.NextSeq()); d < 0 || d != e.snd.InFlight() || d > e.snd.Cap() {
		return fmt.Errorf("in flight %d (buffer %d, %d slots)", d, e.snd.InFlight(), e.snd.Cap())
	}
	if e.snd.Free() < 0 || e.snd.Buffered() > e.snd.Cap()*e.snd.PayloadSize() {
		return fmt.Errorf("send buffer free %d buffered %d", e.snd.Free(), e.snd.Buffered())
	}
	base, next := e.rcv.ReadSeq(), e.rcv.AckSeq()
	if seqno.Offset(base, next) < 0 || seqno.Offset(next, e.lrsn.Inc()) < 0 {
		return fmt.Errorf("receiver base %d next %d lrsn %d", base, next, e.lrsn)
	}
	if seqno.Offset(base, e.lrsn) >= e.rcv.Cap() {
		return fmt.Errorf("receiver span %d > %d", seqno.Offset(base, e.lrsn), e.rcv.Cap())
	}
	if first, ok := e.rloss.First(); ok && first != next || !ok && next != e.lrsn.Inc() {
		return fmt.Errorf("ACK number %d: loss list first %d (%v), lrsn %d", next, first, ok, e.lrsn)
	}
	if e.sloss.Len() > e.inFlight() {
		return fmt.Errorf("sender loss %d > in flight %d", e.sloss.Len(), e.inFlight())
	}
	if e.rloss.Len() > seqno.Offset(next, e.lrsn)+1 {
		return fmt.Errorf("receiver loss %d", e.rloss.Len())
	}
	if e.flowWindow < 0 || e.flowWindow > e.cfg.PeerFlowWindow {
		return fmt.Errorf("flow window %d", e.flowWindow)
	}
	if e.sent.base != e.sndLastAck() || e.sent.n != e.inFlight() {
		return fmt.Errorf("send log from %d holds %d, in flight %d from %d", e.sent.base, e.sent.n, e.inFlight(), e.sndLastAck())
	}
	if d := e.sro.deferred; d != nil && d.Len() > 0 {
		if s, _ := d.Front(); seqno.Offset(e.sndLastAck(), s) < 0 || d.Len() > e.inFlight() {
			return fmt.Errorf("deferred %d from %d, in flight %d from %d", d.Len(), s, e.inFlight(), e.sndLastAck())
		}
	}
	if e.rloss.PendingLen() > e.rloss.Ranges() {
		return fmt.Errorf("%d pending ranges of %d", e.rloss.PendingLen(), e.rloss.Ranges())
	}
	if w := e.rcvReorderWindow(); w < 0 || w > max(e.rtt.RTT(), SYN) {
		return fmt.Errorf("receiver reordering window %v", w)
	}
	return nil
}

func ctrlPkt(typ packet.ControlType, info, dst uint32, body ...uint32) []byte {
	b := make([]byte, 16, 16+4*len(body))
	binary.BigEndian.PutUint32(b, 0x80000000|uint32(typ)<<16)
	binary.BigEndian.PutUint32(b[4:], info)
	binary.BigEndian.PutUint32(b[12:], dst)
	for _, w := range body {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

func dropsTotal(d Drops) uint64 {
	return d.Malformed + d.WrongDest + d.ForgedACK + d.ForgedNAK + d.OutOfWindow + d.Duplicate +
		d.UnknownACK2 + d.IgnoredCtrl
}

// Forged ACKs beyond anything sent and NAKs naming numbers never sent are ignored and counted; the
// transfer completes intact (UDT4 would tear the connection down).
func TestForgedACKAndNAKIgnored(t *testing.T) {
	r := linkRules{delay: time.Millisecond, loss: 0.02, reorder: 0.05}
	l := newLink(5, r, r)
	newPair(l, pairOpts{isnA: 1<<31 - 50, isnB: 77,
		ccA: &fixedCC{period: 20 * time.Microsecond}, ccB: &fixedCC{period: 20 * time.Microsecond}})
	step := 0
	l.inject = func(i int, now time.Time) {
		step++
		if step%7 != 0 {
			return
		}
		e := l.ep[i]
		cur := uint32(e.sndCurrSeq())
		for _, p := range [][]byte{
			ctrlPkt(packet.TypeACK, 99, e.cfg.LocalID, sqAdd(cur, 2), 10, 5, 8000, 100, 100),       // beyond curr+1
			ctrlPkt(packet.TypeACK, 0, e.cfg.LocalID, sqAdd(cur, 1000)),                            // light, beyond
			ctrlPkt(packet.TypeNAK, 0, e.cfg.LocalID, sqAdd(cur, 1)),                               // never sent
			ctrlPkt(packet.TypeNAK, 0, e.cfg.LocalID, uint32(e.sndLastAck())|1<<31, sqAdd(cur, 5)), // range past curr
			ctrlPkt(packet.TypeACK2, uint32(step)*7919, e.cfg.LocalID),                             // unknown ACK2
		} {
			e.HandlePacket(now, p)
			if err := e.invariants(); err != nil {
				t.Fatalf("after forged packet: %v", err)
			}
		}
	}
	transfer(t, l, 1<<20, true, 2*time.Minute)
	for i, e := range l.ep {
		d := e.Stats().Drops
		if d.ForgedACK == 0 || d.ForgedNAK == 0 || d.UnknownACK2 == 0 {
			t.Errorf("endpoint %d: forged packets not counted: %+v", i, d)
		}
	}
}

// malformed returns a packet that every endpoint must drop: wrong destination, truncated, a bad
// control body or a data packet with an impossible payload.
func malformed(r *rand.Rand, dst uint32, payload int) []byte {
	switch r.IntN(10) {
	case 0: // truncated
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case 1: // foreign destination
		b := make([]byte, 16+r.IntN(64))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		binary.BigEndian.PutUint32(b[12:], dst^(1+r.Uint32N(1000)))
		return b
	case 2: // control body not a multiple of 4
		b := ctrlPkt(packet.ControlType(r.IntN(9)), r.Uint32(), dst, r.Uint32())
		return b[:len(b)-1-r.IntN(3)]
	case 3: // ACK of 2 or 3 words
		return ctrlPkt(packet.TypeACK, r.Uint32(), dst, make([]uint32, 2+r.IntN(2))...)
	case 4: // NAK range without its end
		return ctrlPkt(packet.TypeNAK, 0, dst, r.Uint32()|1<<31)
	case 5: // NAK range whose end precedes its start
		s := r.Uint32() & maxSeq
		return ctrlPkt(packet.TypeNAK, 0, dst, s|1<<31, sqAdd(s, -1-r.IntN(1000)))
	case 6: // empty NAK
		return ctrlPkt(packet.TypeNAK, 0, dst)
	case 7: // data without payload
		b := make([]byte, 16)
		binary.BigEndian.PutUint32(b, r.Uint32()&maxSeq)
		binary.BigEndian.PutUint32(b[12:], dst)
		return b
	case 8: // data with an oversized payload
		b := make([]byte, 16+payload+1+r.IntN(100))
		binary.BigEndian.PutUint32(b, r.Uint32()&maxSeq)
		binary.BigEndian.PutUint32(b[12:], dst)
		return b
	default: // control types a stream connection ignores
		types := []packet.ControlType{packet.TypeHandshake, packet.TypeCongestionWarning,
			packet.TypeMsgDropRequest, packet.TypeUserDefined, 9, 0x1234}
		return ctrlPkt(types[r.IntN(len(types))], r.Uint32(), dst, r.Uint32(), r.Uint32())
	}
}

// Malformed, truncated and foreign packets sprayed at both ends during a lossy transfer are all
// dropped and counted, with no effect on the data.
func TestMalformedSprayNoEffect(t *testing.T) {
	r := linkRules{delay: time.Millisecond, loss: 0.05, dup: 0.02, reorder: 0.05}
	l := newLink(6, r, r)
	newPair(l, pairOpts{isnA: 10, isnB: 1<<31 - 100,
		ccA: &fixedCC{period: 20 * time.Microsecond}, ccB: &fixedCC{period: 20 * time.Microsecond}})
	rng := rand.New(rand.NewPCG(1, 2))
	sprayed := [2]uint64{}
	l.inject = func(i int, now time.Time) {
		e := l.ep[i]
		for k := 0; k < 2; k++ {
			before := dropsTotal(e.Stats().Drops)
			e.HandlePacket(now, malformed(rng, e.cfg.LocalID, e.payloadSize))
			if dropsTotal(e.Stats().Drops) != before+1 {
				t.Fatalf("a malformed packet was not dropped and counted exactly once")
			}
			sprayed[i]++
			if err := e.invariants(); err != nil {
				t.Fatal(err)
			}
		}
	}
	transfer(t, l, 1<<20, true, 2*time.Minute)
	t.Logf("sprayed %v; drops A %+v", sprayed, l.ep[0].Stats().Drops)
}

// All NAKs lost: recovery relies on the retransmission timeout alone.
func TestAllNAKsLost(t *testing.T) {
	r := linkRules{delay: time.Millisecond, loss: 0.02, dropNAK: true}
	l := newLink(7, r, r)
	newPair(l, pairOpts{isnA: 5, isnB: 6, ccA: &fixedCC{period: 20 * time.Microsecond}})
	transfer(t, l, 256<<10, false, 5*time.Minute)
}

// A small receive buffer and a slow reader: flow control stalls the sender without losing data.
func TestFlowControlSlowReader(t *testing.T) {
	l := newLink(8, linkRules{delay: time.Millisecond}, linkRules{delay: time.Millisecond})
	newPair(l, pairOpts{isnA: 1<<31 - 10, isnB: 3, recvBuf: 32, sendBuf: 20000})
	a := &app{src: randomBytes(11, 500_000), rbuf: make([]byte, 1)}
	b := &app{rbuf: make([]byte, 3000)}
	// The reader takes 3000 bytes per step only every 2 ms of virtual time.
	var lastRead time.Time
	for !(len(b.dst) == len(a.src) && l.ep[0].Flushed()) {
		if l.now.Sub(lastRead) >= 2*time.Millisecond {
			lastRead = l.now
			n, err := l.ep[1].Read(b.rbuf)
			if err != nil {
				t.Fatal(err)
			}
			b.dst = append(b.dst, b.rbuf[:n]...)
		}
		if l.now.After(time.Unix(1_700_000_000, 0).Add(10 * time.Minute)) {
			t.Fatalf("stalled: %d/%d bytes; stats %+v", len(b.dst), len(a.src), l.ep[0].Stats())
		}
		l.run([2]*app{a, nil}, l.now.Add(time.Millisecond), func() bool { return false })
	}
	if string(b.dst) != string(a.src) {
		t.Fatal("data differs")
	}
	s0, s1 := l.ep[0].Stats(), l.ep[1].Stats()
	if s1.RecvBufferFree < 0 || s0.SendBufferFree != 20000/l.ep[0].payloadSize*l.ep[0].payloadSize { // whole packets
		t.Fatalf("buffers: %+v", s1)
	}
	t.Logf("slow reader: %v virtual, window updates %d, timeouts %d, out-of-window drops %d",
		l.now.Sub(time.Unix(1_700_000_000, 0)), s1.WindowUpdates, s0.Timeouts, s1.Drops.OutOfWindow)
}
