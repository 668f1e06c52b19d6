package stream

import (
	"testing"
	"time"

	"github.com/udtgo/udt/internal/buffer"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

const (
	rvMiddle = 0b00
	rvLast   = 0b01
	rvFirst  = 0b10
	rvSolo   = 0b11
)

// rvRecv returns a message-mode (or stream-mode) receiver fed by hand, and its first number.
func rvRecv(t *testing.T, messages bool) (*link, *Endpoint, seqno.Seq) {
	t.Helper()
	l := newLink(1, linkRules{}, linkRules{})
	if messages {
		newMsgPair(l, 0, 0)
	} else {
		newPair(l, pairOpts{isnA: 1<<31 - 300, isnB: 77})
	}
	e := l.ep[1]
	return l, e, seqno.SeqFromWire(uint32(e.cfg.PeerISN))
}

// rvData is a message-mode data packet to e: number seq, position ff, message no, timestamp ts,
// n payload bytes.
func rvData(e *Endpoint, seq seqno.Seq, ff uint32, no seqno.Msg, ts uint32, n int) []byte {
	b := make([]byte, headerSize+n)
	be.PutUint32(b, uint32(seq))
	be.PutUint32(b[4:], buffer.Word1(ff, true, no))
	be.PutUint32(b[8:], ts)
	be.PutUint32(b[12:], e.cfg.LocalID)
	return b
}

// rvDrop is a message drop request (spec §2.6, Inclusive) for message no, numbers first..last.
func rvDrop(e *Endpoint, no seqno.Msg, first, last seqno.Seq) []byte {
	return ctrlPkt(packet.TypeMsgDropRequest, uint32(no)|1<<31, e.cfg.LocalID, uint32(first), uint32(last))
}

// rvNAKs returns the numbers named by the NAKs e queued since the last call.
func rvNAKs(e *Endpoint) []seqno.Seq {
	var out []seqno.Seq
	for {
		b, ok := e.PopControl()
		if !ok {
			return out
		}
		out = nakNumbers(out, b)
	}
}

// nakNumbers appends to out every number the NAK b names (nothing if b is no NAK).
func nakNumbers(out []seqno.Seq, b []byte) []seqno.Seq {
	var n packet.NAK
	if typ, err := packet.Type(b); err != nil || typ != packet.TypeNAK || n.Decode(b) != nil {
		return out
	}
	for _, r := range n.Ranges {
		for s, l := seqno.SeqFromWire(r.First), seqno.SeqFromWire(r.Last); ; s = s.Inc() {
			out = append(out, s)
			if s == l {
				break
			}
		}
	}
	return out
}

// Our sender's usual give-up (drop request first, then its stub carrying the last number): the
// stub is an in-order packet, not a gap filler. Until 2026-12-05 applyPending (inside insert) ran
// applyDrop, whose syncLRSN moved lrsn to the stub itself before onData compared them (found by
// review).
func TestMessageRecvStubAfterPendingDropIsNotAFiller(t *testing.T) {
	l, e, s := rvRecv(t, true)
	now := l.now
	// Message 1: packets s..s+3, of which the receiver gets s, s+1; the sender gives it up and
	// skips s+2, sends the stub at s+3.
	e.HandlePacket(now, rvData(e, s, rvFirst, 1, 10, 1000))
	e.HandlePacket(now, rvData(e, s.Add(1), rvMiddle, 1, 20, 1000))
	e.HandlePacket(now, rvDrop(e, 1, s, s.Add(3)))
	e.HandlePacket(now, rvData(e, s.Add(3), rvMiddle, 1, 30, 1)) // the stub (FF = 00)
	if err := e.invariants(); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.PktRecvFilled != 0 {
		t.Errorf("PktRecvFilled = %d for 3 in-order packets (no gap was ever filled)", st.PktRecvFilled)
	}
	if ack := e.rcv.AckSeq(); ack != s.Add(4) {
		t.Fatalf("ACK %v, want %v", ack, s.Add(4))
	}
	t.Logf("Discarded %d (2 data packets + the 1-byte stub)", st.Messages.Discarded)
}

// Same with a gap before the drop: pending drop [s+1, s+3] of message 2 arrives, then packet s+5
// (message 3) arrives in order of transmission; s+4 (message 3's first) is missing. The drop is
// applied at insert, the gap s+4 is reported, and s+5 is no filler.
func TestMessageRecvPendingDropThenGap(t *testing.T) {
	l, e, s := rvRecv(t, true)
	now := l.now
	e.HandlePacket(now, rvData(e, s, rvSolo, 1, 10, 100))
	e.HandlePacket(now, rvDrop(e, 2, s.Add(1), s.Add(3)))
	e.HandlePacket(now, rvData(e, s.Add(5), rvMiddle, 3, 50, 1000))
	if err := e.invariants(); err != nil {
		t.Fatal(err)
	}
	naks := rvNAKs(e)
	for _, x := range naks {
		if seqno.Offset(s.Add(1), x) >= 0 && seqno.Offset(x, s.Add(3)) >= 0 {
			t.Errorf("NAK names %v, given up", x)
		}
	}
	st := e.Stats()
	t.Logf("NAKs %v, filled %d, lrsn %v ack %v", naks, st.PktRecvFilled, e.lrsn, e.rcv.AckSeq())
	if st.PktRecvFilled != 0 {
		t.Errorf("PktRecvFilled = %d, no gap was filled", st.PktRecvFilled)
	}
}

// A late (reordered) packet that fills the hole at the ACK point is recognised as late in message
// mode as in stream mode. Until 2026-12-05 insert's loss-list cleanup (RemoveBefore(ack)) took it
// out of the loss list before onFill looked it up, so PktReordered, the reordering window, the
// repair record and the spurious-NAK ACK were all skipped (found by review).
func TestMessageRecvLateFillerAtACKPoint(t *testing.T) {
	for _, messages := range []bool{false, true} {
		l, e, s := rvRecv(t, messages)
		now := l.now
		ff := func(p uint32) uint32 { return p }
		// Two solo messages; s+1 (sent later, ts 20) overtakes s (ts 10).
		e.HandlePacket(now, rvData(e, s.Add(1), ff(rvSolo), 2, 20, 100))
		now = now.Add(3 * time.Millisecond)
		e.HandlePacket(now, rvData(e, s, ff(rvSolo), 1, 10, 100))
		st := e.Stats()
		t.Logf("messages=%v: filled %d reordered %d window %v", messages, st.PktRecvFilled, st.PktReordered, e.rro.win.extent)
		if st.PktRecvFilled != 1 || st.PktReordered != 1 || e.rro.win.extent == 0 {
			t.Errorf("messages=%v: a late packet at the ACK point: filled %d, reordered %d, window %v; want 1, 1, > 0",
				messages, st.PktRecvFilled, st.PktReordered, e.rro.win.extent)
		}
	}
}

// What that cost on a path that reorders (25 % of packets 5 ms late, 50 ms RTT, no loss): the
// message-mode receiver never learnt its reordering window from the holes at the ACK point, NAKed
// reordering as loss, and the sender retransmitted 647 of 3447 packets (19 %); stream mode on the
// same path stays under 2 % (TestReorderNoSpuriousRetransmissions), and message mode now too.
func TestMessageRecvReorderNotLoss(t *testing.T) {
	for _, messages := range []bool{false, true} {
		l := reorderPath(5, 0.25, 5*time.Millisecond)
		var a *msgApp
		if messages {
			newMsgPairWith(l, func(c *Config) { c.Controller = fixedRate() })
			specs := make([]msgSpec, 100)
			for i := range specs {
				b := make([]byte, 40_000)
				for j := range b {
					b[j] = byte(i*31 + j)
				}
				specs[i] = msgSpec{data: b, inOrder: true}
			}
			a = newMsgApp(t, l, specs)
			if !l.run([2]*app{}, l.now.Add(time.Minute), func() bool { return a.delivered == len(specs) }) {
				t.Fatalf("%d of %d delivered", a.delivered, len(specs))
			}
		} else {
			newPair(l, pairOpts{isnA: 1<<31 - 300, isnB: 77, ccA: fixedRate(), ccB: fixedRate()})
			transfer(t, l, 4<<20, false, time.Minute)
		}
		s, r := l.ep[0].Stats(), l.ep[1].Stats()
		t.Logf("messages=%v: sent %d retransmitted %d, dup %d, NAKs %d, reordered %d filled %d, window %v",
			messages, s.PktSent, s.PktRetrans, r.Drops.Duplicate, r.NAKSent, r.PktReordered, r.PktRecvFilled, r.RecvReorderWindow)
		if limit := s.PktSent / 50; s.PktRetrans > limit {
			t.Errorf("messages=%v: %d of %d packets retransmitted on a path that loses none", messages, s.PktRetrans, s.PktSent)
		}
	}
}

// Property run: TTL messages (given up by the sender: drop requests, stubs) over a path that
// loses, duplicates and reorders in both directions, ISNs wrapping; the receiver's invariants
// are checked at every step and every NAK it sends is checked at send time: nothing before the
// ACK number, nothing held or given up.
func TestMessageRecvTTLPropertyRun(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		fwd := linkRules{delay: 5 * time.Millisecond, loss: 0.15, dup: 0.05, reorder: 0.1}
		rev := linkRules{delay: 5 * time.Millisecond, loss: 0.05, dup: 0.05, reorder: 0.1}
		l := newLink(seed, fwd, rev)
		newMsgPair(l, 0, 0)
		specs := randomSpecs(seed+100, 300, 8, 2*time.Millisecond)
		for i := range specs {
			if i%3 != 2 {
				specs[i].ttl = time.Duration(5+i%40) * time.Millisecond
			}
		}
		a := newMsgApp(t, l, specs)
		e := l.ep[1]
		bad := 0
		seen := map[seqno.Seq]bool{}
		l.onDeliver = func(to int, now time.Time, b []byte) {
			if to == 1 && !packet.IsControl(b) {
				seen[seqno.SeqFromWire(be.Uint32(b))] = true
			}
		}
		l.rules[1].drop = func(b []byte) bool {
			if typ, err := packet.Type(b); err != nil || typ != packet.TypeNAK || !packet.IsControl(b) {
				return false
			}
			ack := e.rcv.AckSeq()
			check := func(s seqno.Seq) {
				if seqno.Offset(ack, s) < 0 || e.rcv.Has(s) {
					if bad++; bad < 5 || seen[s] {
						t.Errorf("seed %d: NAK names %v: ACK %v, held/given up %v, data received %v, in loss list %v", seed, s, ack, e.rcv.Has(s), seen[s], e.rloss.Contains(s))
					}
				}
			}
			for _, q := range nakNumbers(nil, b) {
				check(q)
			}
			return false
		}
		step := a.step
		l.inject = func(i int, now time.Time) {
			step(i, now)
			if err := e.invariants(); err != nil { // the receiver (the sender's send log lags skipped numbers)
				t.Fatalf("seed %d: receiver: %v", seed, err)
			}
		}
		cleared := false
		ok := l.run([2]*app{}, l.now.Add(2*time.Minute), func() bool {
			if !cleared && l.now.Sub(a.start) >= 2*time.Second {
				l.rules[0].loss, l.rules[1].loss = 0, 0
				cleared = true
			}
			for k := range specs {
				if specs[k].ttl == 0 && !a.got[k] {
					return false
				}
			}
			return a.next == len(specs) && l.ep[0].Flushed()
		})
		s, r := l.ep[0].Stats(), l.ep[1].Stats()
		for k, x := range l.ep {
			if err := x.invariants(); err != nil {
				t.Errorf("seed %d: endpoint %d at the end: %v", seed, k, err)
			}
		}
		if !ok {
			t.Fatalf("seed %d: stalled: %d of %d delivered; sender %+v receiver %+v", seed, a.delivered, len(specs), s.Messages, r.Messages)
		}
		if a.delivered+int(s.Messages.Expired) < len(specs) {
			t.Errorf("seed %d: %d delivered + %d given up < %d", seed, a.delivered, s.Messages.Expired, len(specs))
		}
		t.Logf("seed %d: %d given-up numbers NAKed; delivered %d, expired %d, dropreq sent %d recv %d, discarded %d, filled %d reordered %d dup %d NAKs %d ACKs %d",
			seed, bad, a.delivered, s.Messages.Expired, s.Messages.DropReqSent, r.Messages.DropReqRecv, r.Messages.Discarded,
			r.PktRecvFilled, r.PktReordered, r.Drops.Duplicate, r.NAKSent, r.ACKSent)
	}
}

// A drop request applied at insert (applyPending) behind an earlier hole: the given-up slots are
// not reported lost (spec §2.6 step 3 moves LRSN past them). Until 2026-12-05 the ACK number
// stayed at the hole, syncLRSN (lrsn ≥ ACK − 1) left lrsn below the given-up slots, and onData's
// gap branch recorded and NAKed [lrsn+1, seq−1], the slots just given up.
func TestMessageRecvNoNAKForSlotsGivenUpBehindAHole(t *testing.T) {
	l, e, s := rvRecv(t, true)
	e.rro.nakAtOnce = true
	now := l.now
	e.HandlePacket(now, rvData(e, s, rvSolo, 1, 10, 100))
	// s+1 (message 2) is lost.
	e.HandlePacket(now, rvData(e, s.Add(2), rvSolo, 3, 30, 100))
	rvNAKs(e)                                                    // the NAK of s+1
	e.HandlePacket(now, rvDrop(e, 4, s.Add(3), s.Add(5)))        // message 4 given up: s+3, s+4 skipped
	e.HandlePacket(now, rvData(e, s.Add(5), rvMiddle, 4, 60, 1)) // its stub
	if err := e.invariants(); err != nil {
		t.Fatal(err)
	}
	for _, x := range rvNAKs(e) {
		t.Errorf("NAK names %v, given up (held as gone: %v)", x, e.rcv.Has(x))
	}
	if e.rloss.Contains(s.Add(3)) || e.rloss.Contains(s.Add(4)) {
		t.Errorf("the loss list holds given-up slots: %d entries, lrsn %v, ACK %v", e.rloss.Len(), e.lrsn, e.rcv.AckSeq())
	}
}

// A forged drop request (another message's number) that reaches past the largest received number
// waits for a packet at or past its last number before it gives anything up, so it cannot break a
// message whose packets are only reordered: here s+2 overtakes s+1, both of message 2. Applying
// pending requests up to each packet that arrives (tried on 2026-12-05 to spare NAKs for numbers
// inside a pending request) gave s+1 up and lost message 2 (found by review).
func TestMessageRecvForgedPendingDropSparesReorderedMessage(t *testing.T) {
	l, e, s := rvRecv(t, true)
	now := l.now
	e.HandlePacket(now, rvData(e, s, rvSolo, 1, 10, 100))
	e.HandlePacket(now, rvDrop(e, 999, s.Add(1), s.Add(10))) // forged: no message 999
	e.HandlePacket(now, rvData(e, s.Add(2), rvMiddle, 2, 30, 1000))
	e.HandlePacket(now, rvData(e, s.Add(1), rvFirst, 2, 20, 1000))
	e.HandlePacket(now, rvData(e, s.Add(3), rvMiddle, 2, 40, 1000))
	e.HandlePacket(now, rvData(e, s.Add(4), rvLast, 2, 50, 1000))
	if err := e.invariants(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	var sizes []int
	for {
		n, _, _ := e.ReadMessage(buf)
		if n == 0 {
			break
		}
		sizes = append(sizes, n)
	}
	if len(sizes) != 2 || sizes[1] != 4000 {
		t.Fatalf("read %v, want [100 4000]: message 2 lost to a request for message 999", sizes)
	}
}
