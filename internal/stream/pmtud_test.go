package stream

import (
	"fmt"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// Packet sizes of these tests: MSS 1500 (packets of up to 1472 bytes), base 1200.
var pmtuOn = PathMTUConfig{Discover: true, Base: 1200, Max: 1472}

// checkSize asserts that endpoint 0 settled within searchStep below the path's limit and never
// sent a Don't-Fragment datagram above it.
func checkSize(t *testing.T, l *link, limit int) {
	t.Helper()
	st := l.ep[0].Stats()
	if st.PacketSize > limit || st.PacketSize <= limit-searchStep {
		t.Fatalf("packet size %d, want in (%d, %d]", st.PacketSize, limit-searchStep, limit)
	}
	t.Logf("size %d (limit %d): %d probes, %d lost, %d changes, %d black holes; %d datagrams dropped for size, %d fragmentable",
		st.PacketSize, limit, st.PMTUProbes, st.PMTUProbeLosses, st.PathMTUChanges, st.PMTUBlackHoles, l.mtuDrops[0], l.frags[0])
}

// watchSettled returns when endpoint 0's search first completed (zero until it has).
func watchSettled(l *link) func() time.Time {
	var settled time.Time
	l.inject = func(i int, now time.Time) {
		if i == 0 && settled.IsZero() && l.ep[0].pmtu.done {
			settled = now
		}
	}
	return func() time.Time { return settled }
}

// Discovery on a path of 1400-byte IP packets without ICMP (a black hole above 1372 bytes of
// UDP payload): the search settles within 20 bytes below the limit within 5 s, every byte
// arrives, and the only datagrams above the limit are probes and their fragmentable resends.
func TestPMTUDiscoveryBlackHole(t *testing.T) {
	for _, limit := range []int{1372, 1252, 1472} {
		l := newLink(11, linkRules{delay: 10 * time.Millisecond, rate: 12_500_000, queue: 400, mtu: limit},
			linkRules{delay: 10 * time.Millisecond})
		newPair(l, pairOpts{isnA: 1, isnB: 2, mss: 1500, pmtu: pmtuOn, ccA: congestion.NewFixed(80e6)})
		start, settled := l.now, watchSettled(l)
		transfer(t, l, 20<<20, false, 2*time.Minute)
		checkSize(t, l, limit)
		if settled().IsZero() || settled().Sub(start) > 5*time.Second {
			t.Fatalf("limit %d: search complete after %v, want ≤ 5 s", limit, settled().Sub(start))
		}
		if st := l.ep[0].Stats(); int(st.PMTUProbeLosses) != l.mtuDrops[0] {
			t.Fatalf("limit %d: %d datagrams dropped for size, but %d probes lost", limit, l.mtuDrops[0], st.PMTUProbeLosses)
		}
		t.Logf("limit %d: settled after %v", limit, settled().Sub(start))
	}
}

// The path's MTU falls from 1500 to 1280 in the middle of a transfer, silently (a black hole)
// or with the kernel told (ICMP): every byte still arrives, the size falls to at most 1252, and
// the packets cut before the drop leave with fragmentation allowed.
func TestPMTUDropMidTransfer(t *testing.T) {
	for _, icmp := range []bool{false, true} {
		l := newLink(12, linkRules{delay: 10 * time.Millisecond, rate: 12_500_000, queue: 400},
			linkRules{delay: 10 * time.Millisecond})
		newPair(l, pairOpts{isnA: 1, isnB: 2, mss: 1500, pmtu: pmtuOn, ccA: congestion.NewFixed(80e6)})
		start := l.now
		var dropped time.Time
		l.inject = func(i int, now time.Time) {
			if dropped.IsZero() && now.Sub(start) > 3*time.Second {
				if got := l.ep[0].PacketSize(); got != 1472 {
					t.Fatalf("before the drop: packet size %d, want 1472", got)
				}
				l.rules[0].mtu, l.rules[0].icmp = 1252, icmp
				dropped = now
			}
		}
		transfer(t, l, 40<<20, false, 5*time.Minute)
		if dropped.IsZero() {
			t.Fatal("the transfer ended before the drop")
		}
		checkSize(t, l, 1252)
		st := l.ep[0].Stats()
		if icmp && st.PMTUBlackHoles != 0 {
			t.Errorf("with ICMP: %d black-hole fallbacks, want 0", st.PMTUBlackHoles)
		}
		if !icmp && st.PMTUBlackHoles == 0 {
			t.Errorf("without ICMP: no black-hole fallback")
		}
		if l.frags[0] == 0 {
			t.Errorf("no packet was sent fragmentable after the drop")
		}
	}
}

// Without discovery the base size is used throughout; without a base, MSS−28.
func TestPMTUOff(t *testing.T) {
	l := newLink(13, linkRules{delay: time.Millisecond, mtu: 1200}, linkRules{delay: time.Millisecond})
	newPair(l, pairOpts{isnA: 1, isnB: 2, mss: 1500, pmtu: PathMTUConfig{Base: 1200}})
	transfer(t, l, 2<<20, true, time.Minute)
	if st := l.ep[0].Stats(); st.PacketSize != 1200 || st.PMTUProbes != 0 || st.PathMTUChanges != 0 || l.mtuDrops[0] != 0 {
		t.Fatalf("fixed base: %+v, %d dropped for size", st, l.mtuDrops[0])
	}
	l = newLink(13, linkRules{delay: time.Millisecond}, linkRules{delay: time.Millisecond})
	newPair(l, pairOpts{isnA: 1, isnB: 2, mss: 1500})
	if got := l.ep[0].PacketSize(); got != 1472 {
		t.Fatalf("no PathMTU config: packet size %d, want 1472", got)
	}
}

// pmtuInvariants checks the search state: base ≤ size ≤ hi ≤ max, a probe above the size.
func (e *Endpoint) pmtuInvariants() error {
	p := &e.pmtu
	if p.size < minPacket || p.size > p.max || p.base > p.max || (p.on && p.size < min(p.base, p.hi)) ||
		p.hi > p.max || (p.probe != 0 && (p.probe <= p.size || p.probe > p.max)) || p.size > e.pktSize {
		return fmt.Errorf("path MTU state %+v (packet %d)", *p, e.pktSize)
	}
	return nil
}

// A jumbo path (MSS 9000, packets of up to 8972 bytes): a probe can only lengthen a packet with
// the next one's bytes, so discovery doubles its way up from the base and still settles within
// searchStep of the limit, within 5 s. (Before the probe was capped at what Grow can build, the
// optimistic 8972-byte probe could never be made and the size stayed at the base.)
func TestPMTUDiscoveryJumbo(t *testing.T) {
	for _, limit := range []int{8972, 4000} {
		l := newLink(13, linkRules{delay: 10 * time.Millisecond, rate: 125_000_000, queue: 4000, mtu: limit},
			linkRules{delay: 10 * time.Millisecond})
		newPair(l, pairOpts{isnA: 1, isnB: 2, mss: 9000, pmtu: PathMTUConfig{Discover: true, Base: 1200, Max: 8972},
			ccA: congestion.NewFixed(800e6)})
		start, settled := l.now, watchSettled(l)
		transfer(t, l, 64<<20, false, 2*time.Minute)
		checkSize(t, l, limit)
		if settled().IsZero() || settled().Sub(start) > 5*time.Second {
			t.Fatalf("limit %d: search complete after %v, want ≤ 5 s", limit, settled().Sub(start))
		}
		t.Logf("limit %d: settled after %v", limit, settled().Sub(start))
	}
}

// The size falls under a backlog of 8 MiB (a bulk writer fills the send buffer ahead of the
// path): the unsent packets are cut again recutChunk bytes per release, since the caller holds
// the connection's lock (in one piece a backlog of tens of MB held it for 9-12 ms). Meanwhile
// the endpoint is due at once, takes no Write and sends no new packet; afterwards the unsent
// bytes are in packets of the new size. (FuzzRecutSteps checks the bytes of a stepped re-cut,
// TestPMTUDropMidTransfer a whole transfer through one.)
func TestPMTURecutInSteps(t *testing.T) {
	l := newLink(15, linkRules{delay: 5 * time.Millisecond, rate: 12_500_000, queue: 400},
		linkRules{delay: 5 * time.Millisecond})
	newPair(l, pairOpts{isnA: 1, isnB: 2, mss: 1500, sendBuf: 16 << 20, pmtu: PathMTUConfig{Base: 1472},
		ccA: congestion.NewFixed(80e6)})
	e := l.ep[0]
	const backlog = 8 << 20
	src := make([]byte, backlog)
	for i := range src {
		src[i] = byte(i*7 + i>>11)
	}
	if n := e.Write(src); n != backlog {
		t.Fatalf("Write took %d of %d", n, backlog)
	}
	e.OnPathMTU(l.now, 1252)
	if !e.snd.Recutting() || e.PacketSize() != 1252 {
		t.Fatalf("after the size fell under %d unsent bytes: packet size %d, re-cutting %v; want 1252, true",
			backlog, e.PacketSize(), e.snd.Recutting())
	}
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 1500)
	}
	releases := 0
	for e.snd.Recutting() {
		if d := e.Departure(); d.IsZero() || d.After(l.now) {
			t.Fatalf("release %d: departure %v during a re-cut, want due at once", releases, d)
		}
		if e.Write([]byte{1}) != 0 || e.CanWrite() {
			t.Fatal("Write took bytes during a re-cut")
		}
		if n, _ := e.Release(l.now, bufs); n != 0 && e.snd.Recutting() {
			t.Fatalf("release %d sent %d packets during a re-cut (nothing was in flight)", releases, n)
		}
		releases++
	}
	// The backlog is at most recutChunk bytes a release, the last release's share aside.
	if min := backlog/recutChunk - 1; releases < min {
		t.Fatalf("the re-cut took %d releases, want ≥ %d (≤ %d bytes each)", releases, min, recutChunk)
	}
	payload := e.PacketSize() - headerSize
	unsent := backlog - int(e.Stats().BytesSent)
	if want := (unsent + payload - 1) / payload; e.snd.Unsent() != want {
		t.Fatalf("%d unsent packets after the re-cut (%d bytes), want %d of %d bytes", e.snd.Unsent(), unsent, want, payload)
	}
	if !e.CanWrite() {
		t.Fatal("no room for Write after the re-cut")
	}
	t.Logf("%d bytes re-cut in %d releases", backlog, releases)
}

// A release can end a re-cut and so give Write room again: conn, which reads Effects (Writable
// included) before the release it does in the same lock hold when a departure is due, must read
// CanWrite again after it (conn's pullLocked does; before, a blocked writer waited for the next
// ACK, 1–2 ms late in a review's simulations). This pins the engine's side of that contract.
func TestRecutReleaseChangesWritable(t *testing.T) {
	l := newLink(15, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newPair(l, pairOpts{isnA: 1, isnB: 2, mss: 1500, sendBuf: 1 << 20, pmtu: PathMTUConfig{Base: 1472},
		ccA: congestion.NewFixed(80e6)})
	e := l.ep[0]
	if n := e.Write(make([]byte, 200<<10)); n != 200<<10 {
		t.Fatal(n)
	}
	e.OnPathMTU(l.now, 1252)
	fx := e.Effects()
	if fx.Writable || fx.Departure.IsZero() || fx.Departure.After(l.now) {
		t.Fatalf("after the size fell: %+v, want not writable and due at once", fx)
	}
	hdrs, pays := make([][]byte, 64), make([][]byte, 64)
	for i := range hdrs {
		hdrs[i] = make([]byte, headerSize)
	}
	if n, _ := e.ReleaseViews(l.now, hdrs, pays); n > 0 {
		e.Unpin()
	}
	if e.snd.Recutting() || !e.CanWrite() {
		t.Fatalf("a release of a 200 KiB backlog's re-cut: re-cutting %v, writable %v; want done and writable", e.snd.Recutting(), e.CanWrite())
	}
}
