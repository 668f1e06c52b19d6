package stream

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/packet"
)

type pairOpts struct {
	isnA, isnB uint32
	ccA, ccB   congestion.Controller
	mss        int
	recvBuf    int
	sendBuf    int
	flow       int
	idle       time.Duration
	pmtu       PathMTUConfig // both endpoints
}

// newPair wires two endpoints (0 = client, 1 = server) through l.
func newPair(l *link, o pairOpts) {
	mk := func(i int, local, peer, isn, peerISN uint32, cc congestion.Controller) *Endpoint {
		return New(Config{
			LocalID: local, PeerID: peer, ISN: isn, PeerISN: peerISN,
			MSS: o.mss, PeerFlowWindow: o.flow, SendBuffer: o.sendBuf, RecvBuffer: o.recvBuf,
			Controller: cc, IdleTimeout: o.idle, Start: l.now, PathMTU: o.pmtu,
		}, l.now)
	}
	l.ep[0] = mk(0, 0x1111, 0x2222, o.isnA, o.isnB, o.ccA)
	l.ep[1] = mk(1, 0x2222, 0x1111, o.isnB, o.isnA, o.ccB)
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// transfer moves size bytes from endpoint 0 to 1 (and, if both, size/2 back) and checks them.
func transfer(t *testing.T, l *link, size int, both bool, limit time.Duration) {
	t.Helper()
	a := &app{src: randomBytes(uint64(size), size), rbuf: make([]byte, 64<<10), dst: make([]byte, 0, size/2)}
	b := &app{rbuf: make([]byte, 37<<10), dst: make([]byte, 0, size)}
	if both {
		b.src = randomBytes(uint64(size)+7, size/2)
	}
	start := l.now
	ok := l.run([2]*app{a, b}, start.Add(limit), func() bool {
		return len(b.dst) >= len(a.src) && len(a.dst) >= len(b.src) &&
			l.ep[0].Flushed() && l.ep[1].Flushed()
	})
	if !ok {
		t.Fatalf("transfer incomplete after %v virtual: got %d/%d and %d/%d bytes; stats A %+v; B %+v",
			l.now.Sub(start), len(b.dst), len(a.src), len(a.dst), len(b.src), l.ep[0].Stats(), l.ep[1].Stats())
	}
	if sha256.Sum256(b.dst) != sha256.Sum256(a.src) || !bytes.Equal(b.dst, a.src) {
		t.Fatalf("A→B data differs")
	}
	if sha256.Sum256(a.dst) != sha256.Sum256(b.src) {
		t.Fatalf("B→A data differs")
	}
	el := l.now.Sub(start)
	sa, sb := l.ep[0].Stats(), l.ep[1].Stats()
	t.Logf("%d bytes in %v virtual (%.0f Mbit/s); A sent %d pkts (%d retrans, %d probes, %d timeouts), NAK recv %d; B NAK sent %d (%d periodic), drops %+v; link lost %v",
		size, el, float64(size)*8/el.Seconds()/1e6, sa.PktSent, sa.PktRetrans, sa.Probes, sa.Timeouts, sa.NAKRecv,
		sb.NAKSent, sb.NAKPeriodic, sb.Drops, l.lost)
	if l.ep[0].Err() != nil || l.ep[1].Err() != nil {
		t.Fatalf("errors: %v %v", l.ep[0].Err(), l.ep[1].Err())
	}
}

func TestTransferLossless(t *testing.T) {
	l := newLink(1, linkRules{delay: time.Millisecond}, linkRules{delay: time.Millisecond})
	newPair(l, pairOpts{isnA: 1000, isnB: 5000})
	transfer(t, l, 4<<20, true, time.Minute)
}

// The largest MSS (65535: 65491-byte payloads, spec §1.1) fits the buffers' slots.
func TestTransferJumboMSS(t *testing.T) {
	r := linkRules{delay: time.Millisecond, loss: 0.02}
	l := newLink(31, r, r)
	newPair(l, pairOpts{isnA: 1<<31 - 3, isnB: 9, mss: 65535})
	if l.ep[0].payloadSize != 65491 || l.ep[0].snd.PayloadSize() != 65491 || l.ep[1].rcv.PayloadSize() != 65491 {
		t.Fatalf("payload %d, buffers %d/%d", l.ep[0].payloadSize, l.ep[0].snd.PayloadSize(), l.ep[1].rcv.PayloadSize())
	}
	transfer(t, l, 4<<20, true, time.Minute)
}

func TestTransferLossy(t *testing.T) {
	for _, tc := range []struct {
		name string
		loss float64
		isn  uint32
		size int
	}{
		{"loss0", 0, 1<<31 - 100, 4 << 20},
		{"loss1", 0.01, 12345, 4 << 20},
		{"loss5", 0.05, 1 << 30, 2 << 20},
		{"loss20", 0.20, 777, 1 << 20},
		{"loss5-wrap", 0.05, 1<<31 - 100, 2 << 20},
		{"loss20-wrap", 0.20, 1<<31 - 100, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := linkRules{delay: 2 * time.Millisecond, rate: 50e6, loss: tc.loss, dup: 0.02, reorder: 0.05}
			l := newLink(uint64(tc.isn)+uint64(tc.loss*1000), r, r)
			cc := &fixedCC{period: 50 * time.Microsecond, window: 4096}
			cc2 := &fixedCC{period: 50 * time.Microsecond, window: 4096}
			newPair(l, pairOpts{isnA: tc.isn, isnB: tc.isn, ccA: cc, ccB: cc2})
			transfer(t, l, tc.size, true, 5*time.Minute)
		})
	}
}

// The native controller (slow start, then DAIMD) fed by the engine fills a 100 Mbit/s, 20 ms RTT
// bottleneck with a drop-tail queue, and recovers the queue's losses.
func TestNativeControllerBottleneck(t *testing.T) {
	fwd := linkRules{delay: 10 * time.Millisecond, rate: 100e6 / 8, queue: 200}
	rev := linkRules{delay: 10 * time.Millisecond}
	l := newLink(10, fwd, rev)
	newPair(l, pairOpts{isnA: 1<<31 - 100, isnB: 5, ccA: congestion.NewNative(), ccB: congestion.NewNative(),
		flow: 8192, recvBuf: 8192})
	size := 12 << 20
	start := l.now
	transfer(t, l, size, false, 2*time.Minute)
	el := l.now.Sub(start)
	mbps := float64(size) * 8 / el.Seconds() / 1e6
	s := l.ep[0].Stats()
	t.Logf("native over 100 Mbit/s: %.1f Mbit/s goodput, period %v, cwnd %d, RTT %v, bandwidth %d pkt/s, recv rate %d pkt/s",
		mbps, s.SendPeriod, s.CongestionWindow, s.RTT, s.Bandwidth, s.RecvRate)
	if mbps < 40 {
		t.Errorf("goodput %.1f Mbit/s on a 100 Mbit/s link", mbps)
	}
}

// Lost control packets: 30 % of ACKs, ACK2s, NAKs and keep-alives vanish on top of 5 % data loss.
func TestControlLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	ctrlLoss := func(b []byte) bool { return packet.IsControl(b) && rng.Float64() < 0.3 }
	r := linkRules{delay: 2 * time.Millisecond, loss: 0.05, reorder: 0.05, dup: 0.02, drop: ctrlLoss}
	l := newLink(12, r, r)
	newPair(l, pairOpts{isnA: 1<<31 - 100, isnB: 1<<31 - 100,
		ccA: &fixedCC{period: 30 * time.Microsecond}, ccB: &fixedCC{period: 30 * time.Microsecond}})
	transfer(t, l, 2<<20, true, 5*time.Minute)
}

// MaxBandwidth caps an otherwise unlimited sender (spec §5.5: period ≥ MSS/MaxBandwidth).
func TestMaxBandwidth(t *testing.T) {
	l := newLink(14, linkRules{delay: time.Millisecond}, linkRules{delay: time.Millisecond})
	newPair(l, pairOpts{isnA: 1, isnB: 2})
	l.ep[0] = New(Config{LocalID: 0x1111, PeerID: 0x2222, ISN: 1, PeerISN: 2, MaxBandwidth: 1e6,
		Start: l.now}, l.now)
	start := l.now
	transfer(t, l, 500_000, false, time.Minute)
	pkts := (500_000 + 1455) / 1456
	want := time.Duration(pkts-1) * 1500 * time.Microsecond // 1500-byte MSS at 10^6 bytes/s
	if el := l.now.Sub(start); el < want || el > want+100*time.Millisecond {
		t.Fatalf("took %v, want ≈ %v", el, want)
	}
	if p := l.ep[0].Stats().SendPeriod; p != 1500*time.Microsecond {
		t.Fatalf("period %v", p)
	}
}

type ackIntervalCC struct{ fixedCC }

func (c *ackIntervalCC) State() congestion.State {
	return congestion.State{ACKInterval: 8, ACKPeriod: 5 * time.Millisecond}
}

// A controller's ACKInterval makes the receiver ACK every N packets (spec §5.7 setACKInterval).
func TestControllerACKInterval(t *testing.T) {
	l := newLink(15, linkRules{delay: time.Millisecond, rate: 10e6}, linkRules{delay: time.Millisecond})
	newPair(l, pairOpts{isnA: 1, isnB: 2, ccB: &ackIntervalCC{}})
	transfer(t, l, 1<<20, false, time.Minute)
	s := l.ep[1].Stats()
	if want := s.PktRecv / 8; s.ACKSent < want*9/10 {
		t.Fatalf("%d ACKs for %d packets, want ≥ %d", s.ACKSent, s.PktRecv, want)
	}
}

// TestTransferViews moves data both ways with ReleaseViews: each batch goes on the wire only
// after the next step's ACKs have freed packets and the applications have written into the freed
// space, as conn's send outside the lock does, so a pinned payload rewritten before its send
// would corrupt the stream. Small send buffers keep them full; loss, duplication and reordering
// make retransmissions, some of packets the peer already has (acknowledged while pinned).
func TestTransferViews(t *testing.T) {
	for _, loss := range []float64{0, 0.05} {
		r := linkRules{delay: 2 * time.Millisecond, rate: 50e6, loss: loss, dup: 0.02, reorder: 0.05}
		l := newLink(99+uint64(loss*100), r, r)
		l.views = true
		newPair(l, pairOpts{isnA: 1<<31 - 300, isnB: 5, sendBuf: 200 * 1456,
			ccA: &fixedCC{period: 20 * time.Microsecond, window: 4096},
			ccB: &fixedCC{period: 20 * time.Microsecond, window: 4096}})
		transfer(t, l, 4<<20, true, 5*time.Minute)
	}
}

// TestReleaseViewsPinned: payloads ReleaseViews handed out stay unchanged until Unpin even when
// an ACK for their packets arrives first and the application fills the space it freed. (An
// honest peer cannot acknowledge a packet before the kernel has read it, but a lying one can,
// and so can an ACK for a spurious retransmission; without the pin the slot, or its page taken
// by another connection, would be rewritten under the send.)
func TestReleaseViewsPinned(t *testing.T) {
	l := newLink(5, linkRules{}, linkRules{})
	const pkts, size = 64, 1456
	newPair(l, pairOpts{isnA: 1<<31 - 10, isnB: 5, sendBuf: pkts * size,
		ccA: &fixedCC{window: 4096}, ccB: &fixedCC{window: 4096}})
	a, b := l.ep[0], l.ep[1]
	src := randomBytes(11, 2*pkts*size)
	if n := a.Write(src[:pkts*size]); n != pkts*size {
		t.Fatalf("Write took %d", n)
	}
	hdrs, pays := make([][]byte, pkts/2), make([][]byte, pkts/2)
	for i := range hdrs {
		hdrs[i] = make([]byte, headerSize)
	}
	n, _ := a.ReleaseViews(l.now, hdrs, pays)
	if n != pkts/2 {
		t.Fatalf("ReleaseViews released %d packets, want %d", n, pkts/2)
	}
	want := make([][]byte, n)
	for i := range n {
		if len(hdrs[i]) != headerSize || !bytes.Equal(pays[i], src[i*size:(i+1)*size]) {
			t.Fatalf("packet %d: header %d bytes, payload not the stream's", i, len(hdrs[i]))
		}
		want[i] = append(append([]byte(nil), hdrs[i]...), pays[i]...)
		b.HandlePacket(l.now, want[i]) // the peer has them before the send "returns"
	}
	l.now = l.now.Add(time.Second)
	b.OnTimer(l.now) // its ACK timer: a full ACK of all n
	for {
		p, ok := b.PopControl()
		if !ok {
			break
		}
		a.HandlePacket(l.now, append([]byte(nil), p...))
	}
	if got := a.snd.AckSeq(); got != a.snd.NextSeq() {
		t.Fatalf("the ACK did not reach the sender: ack %v, next %v", got, a.snd.NextSeq())
	}
	written := a.Write(src[pkts*size:])
	for i := range n {
		if !bytes.Equal(append(append([]byte(nil), hdrs[i]...), pays[i]...), want[i]) {
			t.Fatalf("pinned packet %d changed before Unpin (%d bytes written meanwhile)", i, written)
		}
	}
	if written != 0 {
		t.Fatalf("Write took %d bytes of the pinned packets' space", written)
	}
	if !a.Unpin() {
		t.Fatal("Unpin did not report the space the ACK freed (a blocked writer would not be woken)")
	}
	if got := a.Write(src[pkts*size:]); got != n*size {
		t.Fatalf("after Unpin Write took %d, want the %d bytes the ACK freed", got, n*size)
	}
	// A pin that no ACK overlapped frees nothing at its Unpin.
	if k, _ := a.ReleaseViews(l.now, hdrs, pays); k == 0 || a.Unpin() {
		t.Fatalf("a second batch of %d packets: Unpin reported freed space with no ACK in between", k)
	}
}
