package stream

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// maxSeq and sqAdd are test shorthands for seqno on raw wire words.
const maxSeq = uint32(seqno.MaxSeq)

func sqAdd(a uint32, n int) uint32 { return uint32(seqno.Seq(a).Add(n)) }

// capture takes the control packets an endpoint queued.
type capture struct{ e *Endpoint }

func (c *capture) take() [][]byte {
	var p [][]byte
	for {
		b, ok := c.e.PopControl()
		if !ok {
			return p
		}
		p = append(p, append([]byte(nil), b...))
	}
}

// acks takes the queued control packets and returns the ACKs among them, decoded.
func (c *capture) acks() []packet.ACK {
	var out []packet.ACK
	for _, p := range c.take() {
		var a packet.ACK
		if typ, _ := packet.Type(p); typ == packet.TypeACK && a.Decode(p) == nil {
			out = append(out, a)
		}
	}
	return out
}

func dataPkt(seq, dst uint32, n int) []byte {
	b := make([]byte, 16+n)
	binary.BigEndian.PutUint32(b, seq)
	binary.BigEndian.PutUint32(b[4:], 3<<30|1)
	binary.BigEndian.PutUint32(b[12:], dst)
	for i := range b[16:] {
		b[16+i] = byte(seq + uint32(i))
	}
	return b
}

// The receiver's NAKs, ACK forms, ACK numbers, buffer field and the ACK2 RTT sample (spec §2.3–2.5).
func TestReceiverACKAndNAK(t *testing.T) {
	now := time.Unix(100, 0)
	const isn = 1<<31 - 20
	e := New(Config{LocalID: 7, PeerID: 8, ISN: 1, PeerISN: isn, RecvBuffer: 1000, Start: now}, now)
	c := capture{e}
	full := e.payloadSize
	// Packets isn..isn+9, then a gap of one (isn+10) and of three (isn+12..isn+14).
	for i := 0; i < 10; i++ {
		e.HandlePacket(now, dataPkt(sqAdd(isn, i), 7, full))
	}
	if p := c.take(); len(p) != 0 { // the first ACK waits for the ACK timer (SYN)
		t.Fatalf("%d control packets, want none", len(p))
	}
	e.HandlePacket(now, dataPkt(sqAdd(isn, 11), 7, full))
	e.HandlePacket(now, dataPkt(sqAdd(isn, 15), 7, full))
	p := c.take()
	var nak packet.NAK
	if len(p) != 2 || nak.Decode(p[0]) != nil || len(nak.Ranges) != 1 || nak.Ranges[0] != (packet.SeqRange{First: sqAdd(isn, 10), Last: sqAdd(isn, 10)}) {
		t.Fatalf("first NAK: %x", p)
	}
	if nak.Decode(p[1]) != nil || nak.Ranges[0] != (packet.SeqRange{First: sqAdd(isn, 12), Last: sqAdd(isn, 14)}) {
		t.Fatalf("second NAK: %x", p[1])
	}
	if n, _ := e.Read(make([]byte, 100*full)); n != 10*full {
		t.Fatalf("read %d bytes before the first gap, want %d", n, 10*full)
	}
	// After SYN, a full ACK naming the first missing number.
	now = now.Add(SYN)
	e.OnTimer(now)
	p = c.take()
	var ack packet.ACK
	if len(p) != 1 || ack.Decode(p[0]) != nil || ack.Form != packet.ACKFull || ack.AckNo != sqAdd(isn, 10) {
		t.Fatalf("ACK: %+v from %x", ack, p)
	}
	if ack.AvailBuf != 1000 || ack.RTT != 100000 || ack.RTTVar != 50000 {
		t.Fatalf("ACK fields: %+v", ack)
	}
	if ack.DstSocketID != 8 {
		t.Fatalf("ACK to %d", ack.DstSocketID)
	}
	// ACK2 800 µs later: RTT sample; the same ACK is then not repeated.
	now = now.Add(800 * time.Microsecond)
	e.HandlePacket(now, ctrlPkt(packet.TypeACK2, ack.AckSeq, 7))
	if e.rtt.RTT() != 800*time.Microsecond || e.rcvLastAckAck != seqno.Seq(isn).Add(10) {
		t.Fatalf("RTT %v lastAckAck %d", e.rtt.RTT(), e.rcvLastAckAck)
	}
	e.HandlePacket(now, ctrlPkt(packet.TypeACK2, ack.AckSeq, 7))
	if e.Stats().Drops.UnknownACK2 != 1 {
		t.Fatal("a duplicated ACK2 must not give a second sample")
	}
	now = now.Add(time.Second / 2)
	e.OnTimer(now)
	for _, q := range c.take() {
		if typ, _ := packet.Type(q); typ == packet.TypeACK {
			t.Fatalf("confirmed ACK repeated: %x", q)
		}
	}
	// Filling the gaps advances the ACK to the end; a short packet makes it immediate (medium).
	e.HandlePacket(now, dataPkt(sqAdd(isn, 10), 7, full))
	for s := 12; s <= 14; s++ {
		e.HandlePacket(now, dataPkt(sqAdd(isn, s), 7, full))
	}
	c.take()
	now = now.Add(time.Millisecond)
	e.HandlePacket(now, dataPkt(sqAdd(isn, 16), 7, 10))
	p = c.take()
	if len(p) != 1 || ack.Decode(p[0]) != nil || ack.AckNo != sqAdd(isn, 17) || ack.Form != packet.ACKMedium {
		t.Fatalf("ACK after short packet: %+v", ack)
	}
	// Light ACK after 64 more packets.
	for s := 17; s < 17+64; s++ {
		e.HandlePacket(now, dataPkt(sqAdd(isn, s), 7, full))
	}
	p = c.take()
	if len(p) != 1 || ack.Decode(p[0]) != nil || ack.Form != packet.ACKLight || ack.AckNo != sqAdd(isn, 17+64) || ack.AckSeq != 0 {
		t.Fatalf("light ACK: %+v (%d packets)", ack, len(p))
	}
	st := e.Stats()
	if st.RcvLoss != 4 || st.NAKSent != 3 || st.NAKPeriodic != 1 || st.LightACKSent != 1 || st.Drops.Duplicate != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Duplicates and out-of-window packets are dropped and counted.
	e.HandlePacket(now, dataPkt(sqAdd(isn, 20), 7, full))
	e.HandlePacket(now, dataPkt(sqAdd(isn, 5), 7, full))
	e.HandlePacket(now, dataPkt(sqAdd(isn, 10+1000), 7, full))
	if d := e.Stats().Drops; d.Duplicate != 2 || d.OutOfWindow != 1 {
		t.Fatalf("drops %+v", d)
	}
}

type recordCC struct {
	fixedCC
	acks   []congestion.ACK
	losses [][]congestion.Range
}

func (r *recordCC) OnACK(_ time.Time, a congestion.ACK) { r.acks = append(r.acks, a) }
func (r *recordCC) OnLoss(_ time.Time, l congestion.Loss) {
	r.losses = append(r.losses, append([]congestion.Range(nil), l.Ranges...))
}

// The sender's packet pairs, ACK processing (buffer release, flow window, ACK2, controller feed)
// and NAK-driven retransmission before new data (spec §2.3, §2.4, §4.3, §6).
func TestSenderACKNAKAndPairs(t *testing.T) {
	now := time.Unix(100, 0)
	const isn = 1<<31 - 3 // the 4th packet is seq 0: a pair opener (seq&0xF == 0)
	cc := &recordCC{fixedCC: fixedCC{period: 100 * time.Microsecond}}
	e := New(Config{LocalID: 7, PeerID: 8, ISN: isn, PeerISN: 1, PeerFlowWindow: 64, Controller: cc,
		Start: now, PacingTolerance: -1}, now) // pacer.Exact: exact slots, to see the pair
	c := capture{e}
	src := randomBytes(1, 10*e.payloadSize+100)
	if e.Write(src) != len(src) {
		t.Fatal("short write")
	}
	bufs := make([][]byte, 20)
	for i := range bufs {
		bufs[i] = make([]byte, 1472)
	}
	var seqs []uint32
	var times []time.Duration
	for len(seqs) < 11 {
		n, next := e.Release(now, bufs)
		for _, b := range bufs[:n] {
			var d packet.Data
			if d.Decode(b) != nil || d.DstSocketID != 8 || d.Position != packet.PosSolo {
				t.Fatalf("bad data packet %x", b[:16])
			}
			seqs = append(seqs, d.Seq)
			times = append(times, now.Sub(time.Unix(100, 0)))
			bufs[len(seqs)%len(bufs)] = bufs[len(seqs)%len(bufs)][:cap(bufs[0])]
		}
		for i := range bufs {
			bufs[i] = bufs[i][:cap(bufs[i])]
		}
		if next.IsZero() {
			break
		}
		now = next
	}
	if len(seqs) != 11 || seqs[0] != isn || seqs[3] != 0 || seqs[10] != 7 {
		t.Fatalf("seqs %v", seqs)
	}
	if times[4] != times[3] || times[3]-times[2] != 100*time.Microsecond || times[5]-times[4] != 200*time.Microsecond {
		// The pair's second packet takes the next slot of the schedule: the rate is unchanged.
		t.Fatalf("departures %v: want a back-to-back pair at seq 0/1 and 100 µs slots elsewhere", times)
	}
	if d, _ := e.Release(now, bufs); d != 0 || !e.Departure().IsZero() {
		t.Fatal("nothing more to send")
	}
	// A full ACK for 5 packets: ACK2 back, flow window and RTT taken, buffer released.
	now = now.Add(time.Millisecond)
	e.HandlePacket(now, ctrlPkt(packet.TypeACK, 33, 7, sqAdd(isn, 5), 2000, 100, 40, 5000, 9000))
	p := c.take()
	var a2 packet.ACK2
	if len(p) != 1 || a2.Decode(p[0]) != nil || a2.AckSeq != 33 {
		t.Fatalf("ACK2: %x", p)
	}
	st := e.Stats()
	if st.FlowWindow != 40 || st.FlightSize != 6 || st.RTT != 2000*time.Microsecond || e.sndLastAck() != seqno.Seq(isn).Add(5) {
		t.Fatalf("after ACK: %+v", st)
	}
	if st.SendBufferFree != (e.snd.Cap()-6)*e.payloadSize { // 6 packets held, the last one short
		t.Fatalf("send buffer free %d", st.SendBufferFree)
	}
	if len(cc.acks) != 1 || cc.acks[0].Seq != sqAdd(isn, 5) || cc.acks[0].CurrSeq != 7 || cc.acks[0].RecvRate != 0 || cc.acks[0].Bandwidth != 0 {
		// The rates of an ACK within 16 packets of the start (a pause for data, applimit.go) are not
		// taken: the controller hears "unknown", not UDT4's pre-load.
		t.Fatalf("controller ACK %+v", cc.acks)
	}
	// NAK of 0..1 (already acknowledged: clipped, not a loss), 3..4 and 6: retransmitted first,
	// in order; the controller hears of the two ranges lost.
	e.HandlePacket(now, ctrlPkt(packet.TypeNAK, 0, 7, 0|1<<31, 1, 3|1<<31, 4, 6))
	if len(cc.losses) != 1 || len(cc.losses[0]) != 2 || cc.losses[0][0] != (congestion.Range{First: 3, Last: 4}) ||
		cc.losses[0][1] != (congestion.Range{First: 6, Last: 6}) || e.Stats().SndLoss != 3 {
		t.Fatalf("controller loss %+v", cc.losses)
	}
	if e.Write(src[:100]) != 100 {
		t.Fatal("write")
	}
	var got []uint32
	for try := 0; len(got) < 4; try++ {
		if try > 100 {
			t.Fatalf("released %v", got)
		}
		n, next := e.Release(now, bufs)
		for _, b := range bufs[:n] {
			got = append(got, binary.BigEndian.Uint32(b))
			if s := binary.BigEndian.Uint32(b); s == 6 && string(b[16:]) != string(src[9*e.payloadSize:10*e.payloadSize]) {
				t.Fatal("retransmission differs from the original")
			}
		}
		for i := range bufs {
			bufs[i] = bufs[i][:cap(bufs[i])]
		}
		now = next
	}
	if got[0] != 3 || got[1] != 4 || got[2] != 6 || got[3] != 8 {
		t.Fatalf("order %v: want retransmissions 3, 4, 6, then new 8", got)
	}
	if e.Stats().PktRetrans != 3 {
		t.Fatalf("retrans %d", e.Stats().PktRetrans)
	}
	// A stale ACK changes nothing but is still answered; a light ACK moves the window.
	e.HandlePacket(now, ctrlPkt(packet.TypeACK, 34, 7, sqAdd(isn, 2), 2000, 100, 40))
	if e.sndLastAck() != seqno.Seq(isn).Add(5) || len(c.take()) != 1 {
		t.Fatal("stale ACK")
	}
	e.HandlePacket(now, ctrlPkt(packet.TypeACK, 0, 7, 4))
	if e.sndLastAck() != 4 || e.flowWindow != 40-2 {
		t.Fatalf("light ACK: lastAck %d flow %d", e.sndLastAck(), e.flowWindow)
	}
}

// pairCC is recordCC as a congestion.DeliveryController that may decline packet pairs.
type pairCC struct {
	recordCC
	pairs bool
}

func (*pairCC) OnDelivery(time.Time, congestion.Delivery) {}
func (c *pairCC) PacketPairs() bool                       { return c.pairs }

// deliveryOnlyCC is a DeliveryController that does not say whether it wants pairs.
type deliveryOnlyCC struct{ recordCC }

func (*deliveryOnlyCC) OnDelivery(time.Time, congestion.Delivery) {}

// A controller that declines packet pairs (congestion.PacketPairer), directly or through a
// wrapper, gets none: every packet, the pair openers (seq&0xF == 0) included, takes its own slot
// of the schedule. One that does not say gets them, as from UDT4's sender, whether or not it takes
// delivery samples.
func TestDeclinedPacketPairs(t *testing.T) {
	const isn = 1<<31 - 3 // seq 0 and seq 16 are pair openers
	period := 100 * time.Microsecond
	for _, tc := range []struct {
		name  string
		cc    congestion.Controller
		pairs bool
	}{
		{"declines", &pairCC{recordCC{fixedCC: fixedCC{period: period}}, false}, false},
		{"declines, wrapped", congestion.WithMaxBandwidth(&pairCC{recordCC{fixedCC: fixedCC{period: period}}, false}, 1e12), false},
		{"asks", &pairCC{recordCC{fixedCC: fixedCC{period: period}}, true}, true},
		{"delivery samples, silent", &deliveryOnlyCC{recordCC{fixedCC: fixedCC{period: period}}}, true},
	} {
		now := time.Unix(100, 0)
		e := New(Config{LocalID: 7, PeerID: 8, ISN: isn, PeerISN: 1, PeerFlowWindow: 64, Controller: tc.cc,
			Start: now, PacingTolerance: -1}, now) // pacer.Exact: exact slots
		src := randomBytes(1, 24*e.payloadSize)
		if e.Write(src) != len(src) {
			t.Fatal("short write")
		}
		bufs := make([][]byte, 8)
		var times []time.Time
		for len(times) < 24 {
			for i := range bufs {
				bufs[i] = make([]byte, 1472)
			}
			n, next := e.Release(now, bufs)
			for range n {
				times = append(times, now)
			}
			if next.IsZero() {
				break
			}
			now = next
		}
		if len(times) != 24 {
			t.Fatalf("%s: %d packets released, want 24", tc.name, len(times))
		}
		var together []int // packets that left with the one before
		for i := 1; i < len(times); i++ {
			if times[i].Equal(times[i-1]) {
				together = append(together, i)
			}
		}
		// Packets 3 and 19 are seq 0 and 16: with pairs, 4 and 20 follow them at once.
		if want := []int{4, 20}; tc.pairs && !slices.Equal(together, want) {
			t.Errorf("%s: packets %v left with the one before; want the pairs' second packets %v", tc.name, together, want)
		} else if !tc.pairs && len(together) > 0 {
			t.Errorf("%s: packets %v left with the one before; want every packet in its own slot", tc.name, together)
		}
	}
	if wantsPairs(congestion.NewBBR()) || wantsPairs(congestion.WithMaxBandwidth(congestion.NewBBR(), 1e6)) {
		t.Error("BBR, bare or capped, wants packet pairs; it never reads them")
	}
	if wantsPairs(congestion.NewFixed(1e8)) {
		t.Error("Fixed wants packet pairs; it reads no estimate")
	}
	if !wantsPairs(congestion.NewNative()) || !wantsPairs(congestion.WithMaxBandwidth(congestion.NewNative(), 1e6)) {
		t.Error("the native controller, bare or capped, declines the packet pairs its rate increase reads")
	}
}

// The timer ACK leaves with the first data packet that arrives once the ACK period has passed,
// so that its time is that packet's arrival (a sender's delivery-rate samples assume as much);
// the timer sends it itself only after a whole period without data, rounded up to a quarter
// period.
func TestTimerACKLeavesOnArrival(t *testing.T) {
	start := time.Unix(100, 0)
	const isn = 1000
	e := New(Config{LocalID: 7, PeerID: 8, ISN: 1, PeerISN: isn, RecvBuffer: 1000, Start: start}, start)
	c := capture{e}
	at := func(us int) time.Time { return start.Add(time.Duration(us) * time.Microsecond) }
	// The period is SYN (10 ms) before an RTT sample. Packets at 1, 4 and 7 ms.
	for i, ms := range []int{1, 4, 7} {
		e.HandlePacket(at(ms*1000), dataPkt(sqAdd(isn, i), 7, e.payloadSize))
	}
	// 7 ms + a period, on the 2.5 ms grid from the last ACK (at the start).
	if got := e.NextTimer(); !got.Equal(at(17500)) {
		t.Fatalf("next timer %v after the start, want 17.5 ms", got.Sub(start))
	}
	e.OnTimer(at(10000))
	if a := c.acks(); len(a) != 0 {
		t.Fatalf("the timer sent %d ACKs at 10 ms while data was arriving, want none", len(a))
	}
	e.HandlePacket(at(11000), dataPkt(sqAdd(isn, 3), 7, e.payloadSize))
	if a := c.acks(); len(a) != 1 || a[0].AckNo != sqAdd(isn, 4) {
		t.Fatalf("ACKs on the arrival at 11 ms: %+v, want one acknowledging 4 packets", a)
	}
	// The flight ends at 14 ms: the timer sends its ACK a period later, rounded up to the grid
	// of the last ACK (11 + 10 + 2·2.5 ms).
	e.HandlePacket(at(14000), dataPkt(sqAdd(isn, 4), 7, e.payloadSize))
	if got := e.NextTimer(); !got.Equal(at(26000)) {
		t.Fatalf("next timer %v after the start, want 26 ms", got.Sub(start))
	}
	e.OnTimer(at(21000))
	if a := c.acks(); len(a) != 0 {
		t.Fatalf("%d ACKs at 21 ms, 7 ms after the last packet; want none", len(a))
	}
	e.OnTimer(at(26000))
	if a := c.acks(); len(a) != 1 || a[0].AckNo != sqAdd(isn, 5) {
		t.Fatalf("ACKs at 26 ms: %+v, want one acknowledging 5 packets", a)
	}
}

// tinyACKPeriod is a controller asking for a 1 ns ACK period.
type tinyACKPeriod struct{ fixedCC }

func (c *tinyACKPeriod) State() congestion.State {
	st := c.fixedCC.State()
	st.ACKPeriod = time.Nanosecond
	return st
}

// A controller's ACK period too short to divide into steps still gives a timer deadline (no
// division by zero) and an ACK per arrival.
func TestTinyACKPeriod(t *testing.T) {
	start := time.Unix(100, 0)
	cc := &tinyACKPeriod{fixedCC{period: time.Millisecond, window: 16}}
	e := New(Config{LocalID: 7, PeerID: 8, ISN: 1, PeerISN: 1000, RecvBuffer: 1000, Start: start, Controller: cc}, start)
	c := capture{e}
	for i := range 3 {
		now := start.Add(time.Duration(i+1) * time.Microsecond)
		e.HandlePacket(now, dataPkt(sqAdd(1000, i), 7, e.payloadSize))
		_ = e.NextTimer()
		e.OnTimer(now.Add(time.Nanosecond))
	}
	n := 0
	for _, p := range c.take() {
		if typ, _ := packet.Type(p); typ == packet.TypeACK {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d ACKs for 3 packets with a 1 ns ACK period, want 3", n)
	}
}

// A packet that fills the hole at the cumulative ACK point is acknowledged at once (RFC 5681
// §4.2); one that fills a later hole changes no ACK number and waits for the timer ACK.
func TestACKOnFilledHole(t *testing.T) {
	now := time.Unix(100, 0)
	const isn = 1<<31 - 3 // the holes straddle the wrap
	e := New(Config{LocalID: 7, PeerID: 8, ISN: 1, PeerISN: isn, RecvBuffer: 1000, Start: now}, now)
	c := capture{e}
	full := e.payloadSize
	// pkt is packet i stamped at µs ts (spec §1.2): originals at 10·i, retransmissions later, so
	// the receiver tells a repair from a late original (reorder.go).
	pkt := func(i int, ts uint32) []byte {
		b := dataPkt(sqAdd(isn, i), 7, full)
		binary.BigEndian.PutUint32(b[8:], ts)
		return b
	}
	// 0–4, then holes at 5 and 7.
	for _, i := range []int{0, 1, 2, 3, 4, 6, 8, 9} {
		e.HandlePacket(now, pkt(i, uint32(10*i)))
	}
	if a := c.acks(); len(a) != 0 {
		t.Fatalf("%d ACKs before any hole was filled, want none (the timer's)", len(a))
	}
	now = now.Add(100 * time.Microsecond)
	e.HandlePacket(now, pkt(7, 500))
	if a := c.acks(); len(a) != 0 {
		t.Fatalf("filling the second hole sent %+v; the ACK number is unchanged, want none", a)
	}
	e.HandlePacket(now, pkt(5, 510))
	if a := c.acks(); len(a) != 1 || a[0].AckNo != sqAdd(isn, 10) {
		t.Fatalf("filling the hole at the ACK point sent %+v, want one ACK of 10 packets", a)
	}
	// A duplicate of a filled packet sends nothing.
	e.HandlePacket(now, pkt(5, 520))
	if a := c.acks(); len(a) != 0 {
		t.Fatalf("a duplicate sent %+v, want none", a)
	}
}
