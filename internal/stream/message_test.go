package stream

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// newMsgPair wires two message-mode endpoints (0 sends, 1 receives) through l, with fixed-rate
// controllers unless cc makes them.
func newMsgPair(l *link, sendBuf, recvBuf int, cc ...congestion.Factory) {
	newMsgPairWith(l, func(c *Config) {
		c.SendBuffer, c.RecvBuffer = sendBuf, recvBuf
		if len(cc) > 0 {
			c.Controller = cc[0]()
		}
	})
}

// newMsgPairWith is newMsgPair with each endpoint's Config adjusted by set (called once per
// endpoint, so that a controller it makes is each one's own).
func newMsgPairWith(l *link, set func(*Config)) {
	mk := func(local, peer, isn, peerISN uint32) *Endpoint {
		c := Config{
			LocalID: local, PeerID: peer, ISN: isn, PeerISN: peerISN, Messages: true,
			Controller: &fixedCC{period: 20 * time.Microsecond}, Start: l.now,
		}
		set(&c)
		return New(c, l.now)
	}
	l.ep[0] = mk(0x1111, 0x2222, 1<<31-300, 77)
	l.ep[1] = mk(0x2222, 0x1111, 77, 1<<31-300)
}

// msgSpec is one message a test writes.
type msgSpec struct {
	data    []byte
	sum     [32]byte
	ttl     time.Duration
	inOrder bool
	at      time.Duration // write no earlier than this after the start
}

// msgApp writes specs on ep[0] and reads messages on ep[1] from link.inject, checking each read:
// exactly one whole message (SHA-256), none twice, and an in-order message only after every
// earlier one was delivered.
type msgApp struct {
	t         *testing.T
	l         *link
	start     time.Time
	specs     []msgSpec
	next      int
	bySum     map[[32]byte]int
	got       []bool
	delivered int
	small     int // reads retried after a too-small buffer
	rng       *rand.Rand
	buf       []byte
	lenient   *bool // when set and true, unknown messages are tolerated (a forged packet was taken)

	// parts > 0: messages are written (BeginMessage, FillMessage) and read (PinMessage,
	// ReadPinned) in parts of this many bytes, one part per step while packets are on the link
	// (then all), so that packets, ACKs, NAKs and TTL expiries come between the parts.
	parts          int
	filled         int // bytes of specs[next] filled (BeginMessage done when begun)
	begun          bool
	pinned, copied int // the message being read in parts, and its bytes copied
}

func newMsgApp(t *testing.T, l *link, specs []msgSpec) *msgApp {
	a := &msgApp{t: t, l: l, start: l.now, specs: specs, bySum: map[[32]byte]int{},
		got: make([]bool, len(specs)), rng: rand.New(rand.NewPCG(3, 4)), buf: make([]byte, 1<<20)}
	for i := range specs {
		a.specs[i].sum = sha256.Sum256(specs[i].data)
		a.bySum[a.specs[i].sum] = i
	}
	l.inject = a.step
	return a
}

func (a *msgApp) step(i int, now time.Time) {
	e := a.l.ep[i]
	if i == 0 && a.parts > 0 {
		a.writeParts(e, now)
		return
	}
	if i == 0 {
		for a.next < len(a.specs) && now.Sub(a.start) >= a.specs[a.next].at {
			s := a.specs[a.next]
			ok, err := e.WriteMessage(now, s.data, s.ttl, s.inOrder)
			if err != nil {
				a.t.Fatalf("message %d: %v", a.next, err)
			}
			if !ok {
				return
			}
			a.next++
		}
		return
	}
	if a.parts > 0 {
		a.readParts(e)
		return
	}
	for e.CanRead() {
		p := a.buf
		if a.rng.IntN(4) == 0 {
			p = p[:a.rng.IntN(2000)+1]
		}
		n, size, err := e.ReadMessage(p)
		if err != nil {
			a.t.Fatalf("read: %v", err)
		}
		if n == 0 && size > 0 {
			if size <= len(p) {
				a.t.Fatalf("message of %d bytes refused for a %d-byte buffer", size, len(p))
			}
			a.small++
			n, size, _ = e.ReadMessage(a.buf[:size])
			if n != size {
				a.t.Fatalf("retry with the reported size %d returned %d", size, n)
			}
		}
		if n == 0 {
			return
		}
		a.check(n)
	}
}

// check checks the message of n bytes read into a.buf: one whole message written, not delivered
// before, and an in-order one after every earlier one.
func (a *msgApp) check(n int) {
	k, ok := a.bySum[sha256.Sum256(a.buf[:n])]
	if !ok && a.lenient != nil && *a.lenient {
		return
	}
	if !ok {
		a.t.Fatalf("read %d bytes that are no message written (boundaries lost)", n)
	}
	if a.got[k] {
		a.t.Fatalf("message %d delivered twice", k)
	}
	if a.specs[k].inOrder && (a.lenient == nil || !*a.lenient) {
		for j := range k {
			if !a.got[j] && a.specs[j].ttl == 0 {
				a.t.Fatalf("in-order message %d delivered before message %d", k, j)
			}
		}
	}
	a.got[k] = true
	a.delivered++
}

// writeParts is the writer of a msgApp with parts: one part of a message per step while the
// link carries packets (the next step comes with the next packet), else the rest of it.
func (a *msgApp) writeParts(e *Endpoint, now time.Time) {
	for a.next < len(a.specs) && now.Sub(a.start) >= a.specs[a.next].at {
		if !a.writePart(e, now) || len(a.l.q) > 0 {
			return
		}
	}
}

// writePart writes the next part of specs[next]; false if it must wait for room.
func (a *msgApp) writePart(e *Endpoint, now time.Time) bool {
	s := a.specs[a.next]
	if !a.begun {
		ok, err := e.BeginMessage(now, len(s.data), s.ttl, s.inOrder)
		if err != nil {
			a.t.Fatalf("message %d: %v", a.next, err)
		}
		if !ok {
			return false
		}
		a.begun, a.filled = true, 0
	}
	end := min(len(s.data), a.filled+a.parts)
	n, done := e.FillMessage(s.data[a.filled:end])
	if n != end-a.filled || done != (end == len(s.data)) {
		a.t.Fatalf("message %d: FillMessage took %d of %d bytes, done %v", a.next, n, end-a.filled, done)
	}
	if a.filled = end; done {
		a.next++
		a.begun = false
	}
	return true
}

// readParts is the reader of a msgApp with parts: one part of a message per step while the link
// carries packets, else all it can read.
func (a *msgApp) readParts(e *Endpoint) {
	for a.readPart(e) && len(a.l.q) == 0 {
	}
}

// readPart reads the next part of a message; false if none is ready.
func (a *msgApp) readPart(e *Endpoint) bool {
	if a.pinned == 0 {
		if a.pinned, a.copied = e.PinMessage(), 0; a.pinned == 0 {
			return false
		}
	}
	n, done := e.ReadPinned(a.buf[a.copied:min(a.pinned, a.copied+a.parts)])
	if a.copied += n; done != (a.copied == a.pinned) || n == 0 {
		a.t.Fatalf("ReadPinned: %d bytes, %d of %d, done %v", n, a.copied, a.pinned, done)
	}
	if done {
		a.check(a.pinned)
		a.pinned = 0
	}
	return true
}

func randomSpecs(seed uint64, n, maxPkts int, every time.Duration) []msgSpec {
	r := rand.New(rand.NewPCG(seed, 9))
	specs := make([]msgSpec, n)
	for i := range specs {
		size := 1 + r.IntN(maxPkts*1456)
		if r.IntN(3) == 0 {
			size = 1 + r.IntN(1456)
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		specs[i] = msgSpec{data: b, inOrder: r.IntN(2) == 0, at: time.Duration(i) * every}
	}
	return specs
}

// Message boundaries survive loss, reordering and duplication: every message arrives once, whole
// (its SHA-256), in-order ones after all earlier ones, and too-small read buffers lose nothing.
func TestMessagesLossReorderDuplicate(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		r := linkRules{delay: 5 * time.Millisecond, loss: 0.05, dup: 0.03, reorder: 0.05}
		l := newLink(seed, r, r)
		newMsgPair(l, 0, 0)
		a := newMsgApp(t, l, randomSpecs(seed, 400, 20, 0))
		if !l.run([2]*app{}, l.now.Add(120*time.Second), func() bool { return a.delivered == len(a.specs) }) {
			t.Fatalf("seed %d: %d of %d messages delivered", seed, a.delivered, len(a.specs))
		}
		st := l.ep[1].Stats()
		if st.RcvLoss == 0 || st.Drops.Duplicate == 0 || a.small == 0 {
			t.Fatalf("seed %d: the test exercised nothing: %d losses, %d duplicates, %d short reads",
				seed, st.RcvLoss, st.Drops.Duplicate, a.small)
		}
		if st.Messages.Read != uint64(len(a.specs)) || st.Messages.Discarded != 0 {
			t.Fatalf("seed %d: stats %+v", seed, st.Messages)
		}
	}
}

// Out-of-order messages (O = 0) are read before an earlier hole is repaired.
func TestMessagesOutOfOrderDelivery(t *testing.T) {
	r := linkRules{delay: 20 * time.Millisecond}
	dropped := false
	r0 := r
	r0.drop = func(b []byte) bool { // lose the first data packet once
		if !dropped && b[0]&0x80 == 0 {
			dropped = true
			return true
		}
		return false
	}
	l := newLink(1, r0, r)
	newMsgPair(l, 0, 0)
	specs := randomSpecs(5, 20, 1, time.Millisecond)
	for i := range specs {
		specs[i].data = specs[i].data[:min(len(specs[i].data), 1000)]
		specs[i].inOrder = false
	}
	a := newMsgApp(t, l, specs)
	var firstAt, lastAt time.Duration
	ok := l.run([2]*app{}, l.now.Add(10*time.Second), func() bool {
		if a.got[0] && firstAt == 0 {
			firstAt = l.now.Sub(a.start)
		}
		if a.got[len(specs)-1] && lastAt == 0 {
			lastAt = l.now.Sub(a.start)
		}
		return a.delivered == len(specs)
	})
	if !ok {
		t.Fatalf("%d of %d delivered", a.delivered, len(specs))
	}
	// The lost first message is repaired after at least one RTT (40 ms); the last one arrives
	// 20 ms + 19 ms after the start.
	if !(lastAt < firstAt) {
		t.Fatalf("the last message (read at %v) waited for the repair of the first (read at %v)", lastAt, firstAt)
	}
}

// Under heavy loss, messages whose TTL passes are given up on both sides (drop requests), the
// connection keeps moving, and every message written once the loss stops arrives.
func TestMessagesTTLExpiry(t *testing.T) {
	t.Run("fixed", func(t *testing.T) { ttlExpiry(t, 0) })
	// A delivery-based controller: the packets a given-up message skips must not look lost or
	// delivered to its rate samples (they were never sent).
	t.Run("bbr", func(t *testing.T) { ttlExpiry(t, 0, congestion.BBRFactory()) })
	// Written and read in parts (BeginMessage, FillMessage, PinMessage, ReadPinned), TTLs passing
	// between the parts.
	t.Run("parts", func(t *testing.T) { ttlExpiry(t, 1000) })
}

// ttlExpiry runs the test, the messages written and read in parts of that many bytes if parts > 0.
func ttlExpiry(t *testing.T, parts int, cc ...congestion.Factory) {
	heavy := linkRules{delay: 10 * time.Millisecond, loss: 0.3}
	l := newLink(7, heavy, linkRules{delay: 10 * time.Millisecond})
	newMsgPair(l, 0, 0, cc...)
	specs := randomSpecs(11, 300, 8, 10*time.Millisecond)
	for i := range specs {
		if i < 200 {
			specs[i].ttl = 100 * time.Millisecond
		}
	}
	a := newMsgApp(t, l, specs)
	a.parts = parts
	cleared := false
	ok := l.run([2]*app{}, l.now.Add(60*time.Second), func() bool {
		if !cleared && l.now.Sub(a.start) >= 2*time.Second {
			l.rules[0].loss = 0 // written from 3 s on: must all arrive
			cleared = true
		}
		for k := 200; k < len(specs); k++ {
			if !a.got[k] {
				return false
			}
		}
		return l.ep[0].Flushed()
	})
	if !ok {
		e := l.ep[0]
		t.Fatalf("%d of %d delivered; sender %+v receiver %+v; sender period %v cwnd %d inflight %d dlv %d/%d sloss %d unsent %d flow %d",
			a.delivered, len(specs), e.Stats().Messages, l.ep[1].Stats().Messages, e.period, e.cwnd,
			e.inFlight(), e.dlv.inflightPkts, e.dlv.n, e.sloss.Len(), e.snd.Unsent(), e.flowWindow)
	}
	s, r := l.ep[0].Stats().Messages, l.ep[1].Stats().Messages
	// Every message given up after one of its packets left is requested dropped (requests are
	// repeated, so there may be more); one given up before any left needs none (giveUp).
	unsent := l.ep[0].msgs.unsent
	if s.Expired == 0 || s.DropReqSent+unsent < s.Expired || r.DropReqRecv == 0 {
		t.Fatalf("no expiry seen: sender %+v (%d given up unsent) receiver %+v", s, unsent, r)
	}
	if a.delivered+int(s.Expired) < len(specs) {
		t.Fatalf("%d delivered + %d given up < %d written", a.delivered, s.Expired, len(specs))
	}
	t.Logf("delivered %d of %d; sender %+v; receiver %+v", a.delivered, len(specs), s, r)
}

// A message larger than the peer's flow window or the send buffer is refused at once; an empty
// one is not sent; the stream calls move nothing on a message endpoint.
func TestMessageLimits(t *testing.T) {
	l := newLink(1, linkRules{}, linkRules{})
	newMsgPair(l, 10*1456, 32)
	e := l.ep[0]
	if e.MaxMessage() != 10*1456 {
		t.Fatalf("MaxMessage %d", e.MaxMessage())
	}
	if _, err := e.WriteMessage(l.now, make([]byte, 10*1456+1), 0, false); err != ErrMessageTooLarge {
		t.Fatalf("oversized: %v", err)
	}
	if ok, err := e.WriteMessage(l.now, nil, 0, false); ok || err != nil {
		t.Fatalf("empty: %v %v", ok, err)
	}
	if e.Write([]byte("x")) != 0 {
		t.Fatal("Write took bytes on a message endpoint")
	}
	if ok, _ := e.WriteMessage(l.now, make([]byte, 6*1456), 0, false); !ok {
		t.Fatal("first message")
	}
	if ok, _ := e.WriteMessage(l.now, make([]byte, 5*1456), 0, false); ok {
		t.Fatal("a message larger than the free space was taken")
	}
}

// TestMessageLimitAtPacketSize: until path MTU discovery confirms a larger size, packets are cut
// smaller than MSS−44, so a message takes more of them. MaxMessage counts packets of the size cut
// now, a message of MaxMessage bytes is delivered through a peer flow window of exactly that many
// packets, and one byte more is refused. A new user's check found 10 % more promised than fitted:
// the larger message was accepted and never delivered (it needed more packets than the peer's
// receive buffer holds).
func TestMessageLimitAtPacketSize(t *testing.T) {
	const window, base = 10, 1200
	l := newLink(5, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newMsgPairWith(l, func(c *Config) {
		c.RecvBuffer, c.PeerFlowWindow = window, window
		c.PathMTU = PathMTUConfig{Discover: true, Base: base}
	})
	e := l.ep[0]
	payload := base - headerSize
	if got := e.MaxMessage(); got != window*payload {
		t.Fatalf("MaxMessage %d at packet size %d, want %d packets of %d bytes", got, e.PacketSize(), window, payload)
	}
	if _, err := e.WriteMessage(l.now, make([]byte, window*payload+1), 0, false); err != ErrMessageTooLarge {
		t.Fatalf("one byte over: %v, want ErrMessageTooLarge", err)
	}
	msg := make([]byte, window*payload)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	a := newMsgApp(t, l, []msgSpec{{data: msg}})
	if !l.run([2]*app{}, l.now.Add(10*time.Second), func() bool { return a.delivered == 1 }) {
		t.Fatalf("a message of MaxMessage bytes was not delivered: %+v", e.Stats().Messages)
	}
}

// TestMessageWaitForRoom: a message that must wait for room in the send buffer is announced
// writable (CanWrite, which wakes a blocked Conn.WriteMessage) once that room is free, counted at
// the size packets are cut at. Found by review: the wait asked for MSS−44 bytes a packet while
// the free room counts the smaller cut size, so a writer waiting for most of the buffer never woke.
func TestMessageWaitForRoom(t *testing.T) {
	const slots, base = 20, 1200
	l := newLink(6, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newMsgPairWith(l, func(c *Config) {
		c.SendBuffer, c.RecvBuffer, c.PeerFlowWindow = slots*1456, 64, 64
		c.PathMTU = PathMTUConfig{Discover: true, Base: base}
	})
	e := l.ep[0]
	if ok, err := e.WriteMessage(l.now, make([]byte, 5000), 0, false); !ok || err != nil {
		t.Fatalf("first message: %v %v", ok, err)
	}
	big := make([]byte, e.MaxMessage())
	if ok, err := e.WriteMessage(l.now, big, 0, false); ok || err != nil {
		t.Fatalf("a message of the whole buffer beside another: %v %v, want to wait", ok, err)
	}
	b := &app{}
	if !l.run([2]*app{nil, b}, l.now.Add(10*time.Second), func() bool { return e.Flushed() }) {
		t.Fatal("the first message was not acknowledged")
	}
	if !e.CanWrite() {
		t.Fatalf("the buffer is empty (%d bytes free) and CanWrite is false: the waiting writer never wakes", e.snd.Free())
	}
	if ok, err := e.WriteMessage(l.now, big, 0, false); !ok || err != nil {
		t.Fatalf("the large message once the buffer is empty: %v %v", ok, err)
	}
}

// FuzzMessageFields injects one arbitrary data packet (any sequence number near the window, any
// FF, O and message number, any length) or message drop request (any number, range and
// Inclusive bit) into a message-mode transfer at 2 % loss. The engine must not panic, its
// invariants must hold, every message read must still be one message written (unless the forged
// packet was taken: then it may spoil messages, as any plausible UDT packet can); a packet that
// was dropped must leave the transfer complete, every message delivered.
func FuzzMessageFields(f *testing.F) {
	f.Add(true, uint16(3), uint32(0xc0000001), uint16(100), false, uint32(0), uint16(0))
	f.Add(true, uint16(40), uint32(0x80000007), uint16(1456), false, uint32(0), uint16(0))
	f.Add(false, uint16(0), uint32(5), uint16(0), true, uint32(2), uint16(10))
	f.Add(false, uint16(900), uint32(0x80000003), uint16(0), false, uint32(1<<30), uint16(3))
	specs := randomSpecs(31, 120, 6, 0)
	f.Fuzz(func(t *testing.T, data bool, off uint16, w1 uint32, size uint16, inclusive bool, span uint32, at uint16) {
		r := linkRules{delay: time.Millisecond, loss: 0.02}
		l := newLink(5, r, r)
		newMsgPair(l, 0, 0)
		a := newMsgApp(t, l, specs)
		lenient := false
		a.lenient = &lenient
		deadline := l.now.Add(2 * time.Minute)
		l.run([2]*app{}, deadline, func() bool { return a.delivered >= int(at)%len(specs) })
		e := l.ep[1]
		base := e.rcv.ReadSeq().Add(int(off) - 64)
		var pkt []byte
		if data {
			pkt = make([]byte, 16+int(size)%1500)
			be.PutUint32(pkt, uint32(base))
			be.PutUint32(pkt[4:], w1)
		} else {
			info := w1 & 0x1fffffff
			if inclusive {
				info |= 1 << 31
			}
			pkt = ctrlPkt(7, info, 0, uint32(base), uint32(base.Add(int(span%20000))))
		}
		be.PutUint32(pkt[12:], e.cfg.LocalID)
		before := e.Stats()
		e.HandlePacket(l.now, pkt)
		dropped := dropsTotal(e.Stats().Drops) > dropsTotal(before.Drops)
		// A plausible packet taken as data, or a drop request applied, may spoil messages (UDT has
		// no authentication, spec §9.1): then only consistency is required, as in FuzzHandlePacket.
		lenient = !dropped
		for i, x := range l.ep {
			if err := x.invariants(); err != nil {
				t.Fatalf("endpoint %d: %v", i, err)
			}
		}
		done := l.run([2]*app{}, deadline, func() bool { return a.next == len(specs) && l.ep[0].Flushed() })
		for i, x := range l.ep {
			if err := x.invariants(); err != nil {
				t.Fatalf("endpoint %d after: %v", i, err)
			}
		}
		if dropped && (!done || a.delivered != len(specs)) {
			t.Fatalf("a dropped packet stalled the transfer: %d of %d written, %d delivered", a.next, len(specs), a.delivered)
		}
	})
}

// On a lossless path, message mode ACKs as stream mode does (one ACK per ACK period) plus at most
// one immediate ACK per message (its short last packet, spec §4.4 step 6), and no in-order
// packet counts as having filled a gap. Before 2026-12-05 every in-order packet of a message
// looked like a gap filler (insert moved the largest received number past it before onData
// compared them) and drew an ACK at once: 38 606 ACKs for 44 800 packets, and the sender's ACK2s
// overflowed the receiver's ACK history (found by a new user's check).
func TestMessageModeACKsPerPeriodNotPerPacket(t *testing.T) {
	const msgs, pkts = 60, 40 // 60 messages of 40 packets
	l := newLink(1, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newMsgPair(l, 0, 0)
	specs := make([]msgSpec, msgs)
	for i := range specs {
		b := make([]byte, pkts*1456-100)
		for j := range b {
			b[j] = byte(i + j)
		}
		specs[i] = msgSpec{data: b, inOrder: true}
	}
	a := newMsgApp(t, l, specs)
	start := l.now
	if !l.run([2]*app{}, l.now.Add(60*time.Second), func() bool { return a.delivered == len(a.specs) }) {
		t.Fatalf("%d of %d messages delivered", a.delivered, len(a.specs))
	}
	elapsed := l.now.Sub(start)
	st := l.ep[1].Stats()
	if st.PktRecvFilled != 0 {
		t.Errorf("%d of %d packets counted as filling a gap on a lossless path", st.PktRecvFilled, st.PktRecv)
	}
	// Timer ACKs: at most one per ACK period (a quarter of the 10 ms RTT, ackPeriod) and the
	// final one; plus one per message end.
	if limit := uint64(elapsed/max(10*time.Millisecond/4, minACKPeriod)) + 1 + msgs; st.ACKSent > limit {
		t.Errorf("%d ACKs for %d packets in %v (%d messages): want at most %d", st.ACKSent, st.PktRecv, elapsed, msgs, limit)
	}
	t.Logf("%d ACKs, %d light ACKs for %d packets in %v", st.ACKSent, st.LightACKSent, st.PktRecv, elapsed)
}

// Message mode: the path is dead both ways for the first 2 s, so every message written then
// passes its TTL (30 ms) and retransmission timeouts fire; once the path is back (no loss at
// all), the transfer must resume and the 100 messages without a TTL must arrive. (A review found
// it stalled for good with BBR: the timer's probes were given-up numbers, which are not resent,
// and the given-up message's stub, the one packet that lets the receiver apply the drop request,
// was held back as new data while the sender awaited the peer: sendable lets it through now.)
func TestMessagesResumeAfterBlackout(t *testing.T) {
	for _, name := range []string{"bbr", "fixed"} {
		t.Run(name, func(t *testing.T) {
			var l *link
			var start time.Time
			black := func([]byte) bool { return l.now.Sub(start) < 2*time.Second }
			l = newLink(1, linkRules{delay: time.Millisecond, rate: 2_500_000, drop: black},
				linkRules{delay: time.Millisecond, drop: black})
			start = l.now
			if name == "bbr" {
				newMsgPair(l, 0, 0, congestion.BBRFactory())
			} else {
				newMsgPair(l, 0, 0)
			}
			specs := randomSpecs(5, 400, 30, 2*time.Millisecond)
			for i := range specs[:300] {
				specs[i].ttl = 30 * time.Millisecond
			}
			a := newMsgApp(t, l, specs)
			ok := l.run([2]*app{}, l.now.Add(2*time.Minute), func() bool {
				for k := 300; k < len(specs); k++ {
					if !a.got[k] {
						return false
					}
				}
				return l.ep[0].Flushed()
			})
			e, r := l.ep[0], l.ep[1]
			if !ok {
				t.Fatalf("stalled: %d of %d messages read; sender: first unacknowledged %v, next %v (a given-up message's stub: %v), in flight %d, loss list %d, awaiting the peer %v, timeouts %d; receiver: ACK %v, largest received %v, pending drop requests %v",
					a.delivered, len(specs), e.sndLastAck(), e.snd.NextSeq(), e.snd.Stub(e.snd.NextSeq()), e.inFlight(), e.sloss.Len(), e.awaitingPeer, e.Stats().Timeouts,
					r.rcv.AckSeq(), r.lrsn, r.msgs.pending)
			}
		})
	}
}
