package stream

import (
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/buffer"
	"github.com/udtgo/udt/internal/seqno"
)

// Path MTU discovery: datagram packetization-layer PMTUD (DPLPMTUD, RFC 8899), with the
// kernel's ICMP-fed path MTU (RFC 1191, RFC 8201) as a hint conn passes in (OnPathMTU).
//
// Sizes here are packet sizes: a data packet's UDP payload, UDT header included (MSS − 28 for a
// full packet of the negotiated MSS). The search runs between Base (assumed to work, RFC 8899
// BASE_PLPMTU) and Max (min of the negotiated MSS − 28 and the interface's MTU, conn's to
// compute); new packets are cut at the largest confirmed size.
//
//   - A probe is a real data packet: the next new packet, lengthened to the probed size with
//     bytes of the packet after it (buffer.SendBuffer.Grow), so a UDT4 peer receives an ordinary
//     packet smaller than the negotiated MSS and the probe needs no wire format of its own. One
//     probe is in flight at a time. The first probes Max itself: the interface's MTU is the
//     path's on most paths, which then take full-size packets after one round trip (and a UDT4
//     receiver ACKs every packet shorter than the negotiated MSS's, spec §4.4 step 6, so full
//     size matters). Then binary search (quic-go's mtu_discoverer shape): the midpoint of the
//     confirmed size and the largest size not known to fail.
//   - Confirmed by delivery: an ACK (full, medium or light) past the probe's sequence number
//     while the probe was never retransmitted. Failed: the probe is retransmitted (the receiver
//     NAKed it, or the retransmission timer re-queued it) or the local stack refused it
//     (EMSGSIZE). A size fails for good after MaxProbes consecutive failures (RFC 8899 §5.1.2,
//     robust to isolated loss); it then bounds the search. The search is complete once the
//     range is narrower than searchStep, and starts again after raiseTimer.
//   - When the size changes, the packets not yet sent are cut again at it: one copy of the unsent
//     bytes (at most SendBuffer, a few times per connection), recutChunk bytes per release
//     (buffer.SendBuffer.StartRecut, RecutStep), since the caller holds the connection's lock:
//     in one piece a bulk writer's backlog of up to the whole send buffer (tens of MB) held it
//     for 9-12 ms. New data waits for the last step (the release right after is due at once);
//     retransmissions do not.
//   - A failed probe, and every packet sent before the size fell, cannot be cut again (UDT4
//     numbers packets, not bytes): those leave with fragmentation allowed (RFC 8899 §4.4: a PL
//     that cannot resegment retransmits with network-layer fragmentation). conn sends a packet
//     longer than PacketSize that is not the probe (ProbeSeq) that way.
//   - Black hole (RFC 8899 §4.3): two retransmission-timer expiries with nothing heard from the
//     receiver in between (no NAK, no ACK progress: none of our data reached it) while packets
//     above Base are in use mean the path may have shrunk without telling: the size falls back
//     to Base and the search restarts below the size that stopped working. On a path that only
//     lost everything for a while this costs one quick search.
//   - OnPathMTU (the kernel's path MTU after an ICMP "packet too big" or an EMSGSIZE): a size
//     below the current one becomes the current size and the search's top (a hint never
//     raises the size, RFC 8899 §4.6.2), and in-flight packets above it are sent again at once
//     (as Linux TCP's tcp_simple_retransmit does on an MTU drop).

// PathMTUConfig configures the packet size and its discovery.
type PathMTUConfig struct {
	// Discover turns the search on (the sender's datagrams must leave with Don't Fragment set).
	Discover bool
	// Base is the packet size in bytes used first and assumed to work (0 means Max); at most
	// Max.
	Base int
	// Max caps the packet size in bytes (0 means MSS−28).
	Max int
}

// Search constants.
const (
	// MaxProbes is the number of consecutive failed probes after which a size is taken to
	// exceed the path (RFC 8899 §5.1.2 MAX_PROBES, its default).
	MaxProbes = 3
	// searchStep ends the search when the confirmed size and the smallest failed size are
	// closer than this (quic-go's maxMTUDiff): at most 1.4 % of a 1472-byte packet is left.
	searchStep = 20
	// raiseTimer is how long a complete search rests before probing for more (RFC 8899 §5.1.1
	// PMTU_RAISE_TIMER).
	raiseTimer = 600 * time.Second
	// minPacket is the smallest packet a size may fall to: a UDT header and 32 bytes of data
	// (the packet of the smallest MSS UDT4 accepts, 76, spec §1.1).
	minPacket = minMSS - udpIPOverhead
)

// pmtud is the search state, owned by the Endpoint.
type pmtud struct {
	on        bool
	base, max int
	size      int       // confirmed: new packets are cut at this size
	hi        int       // the largest size not known to fail
	probe     int       // the size in flight as a probe, 0 if none
	probeSeq  seqno.Seq // its sequence number
	fails     int       // consecutive failures at the size last probed
	failSize  int
	triedMax  bool          // the optimistic probe (of hi: max, or a hinted size) was sent
	heard     time.Duration // the last NAK or ACK progress: data of ours reached the receiver
	expiry    time.Duration // the last retransmission-timer expiry blackHole saw
	lostProbe bool          // lostSeq is the last probe that failed, not yet acknowledged
	lostSeq   seqno.Seq
	done      bool
	restartAt time.Duration // when a complete search starts again
	changes   uint64        // times size changed
	why       string        // what made the last change (for conn's log)
}

func (e *Endpoint) initPMTU(c PathMTUConfig) {
	full := e.pktSize
	p := &e.pmtu
	p.max = full
	if c.Max > 0 {
		p.max = max(min(c.Max, full), minPacket)
	}
	p.base = p.max
	if c.Base > 0 {
		p.base = max(min(c.Base, p.max), minPacket)
	}
	p.on = c.Discover && p.base < p.max
	p.size, p.hi, p.done = p.base, p.max, !p.on
	e.setPacketSize(p.base)
	p.changes = 0
}

// PacketSize returns the size in bytes of the packets cut now (UDP payload, header included).
// A packet longer than this that is not the probe (ProbeSeq) was cut before the size fell and
// must leave with fragmentation allowed.
func (e *Endpoint) PacketSize() int { return e.pmtu.size }

// ProbeSeq returns the sequence number of the path MTU probe in flight; ok is false if none is.
func (e *Endpoint) ProbeSeq() (seq uint32, ok bool) {
	return uint32(e.pmtu.probeSeq), e.pmtu.probe != 0
}

// PathMTUChanges returns how many times the packet size changed since New.
func (e *Endpoint) PathMTUChanges() uint64 { return e.pmtu.changes }

// setPacketSize makes size the size of new packets: the send buffer's cut, and the rate cap
// (MaxBandwidth counts the real datagrams: the packet plus the 28 bytes of IPv4 and UDP headers).
func (e *Endpoint) setPacketSize(size int) {
	if size != e.pmtu.size {
		e.pmtu.changes++
	}
	e.pmtu.size = size
	e.snd.SetPacketSize(size - headerSize)
	e.minPeriod = congestion.MinPeriod(e.cfg.MaxBandwidth, size+udpIPOverhead)
}

// nextProbe returns the size to probe next, 0 for none now.
func (e *Endpoint) nextProbe(t time.Duration) int {
	p := &e.pmtu
	if !p.on || p.probe != 0 {
		return 0
	}
	if p.done {
		if t < p.restartAt {
			return 0
		}
		p.done, p.hi, p.triedMax = false, p.max, false // PMTU_RAISE_TIMER: look for more again
	}
	// A probe is the next packet lengthened with bytes of the one after it (SendBuffer.Grow), so
	// it can be at most two full packets less a byte: a target beyond that (a jumbo or loopback
	// path with a large Config.MSS) is reached by doubling, one confirmed probe at a time.
	reach := 2*p.size - headerSize - 1
	if !p.triedMax && p.size < p.hi {
		return min(p.hi, reach) // the optimistic probe: max at first, or the size a hint named
	}
	if p.hi-p.size < searchStep {
		p.done, p.restartAt = true, t+raiseTimer
		return 0
	}
	return min((p.size+p.hi+1)/2, reach)
}

// startProbe tries to make the next new packet a probe; call it before taking the packet.
func (e *Endpoint) startProbe(t time.Duration) {
	size := e.nextProbe(t)
	if size == 0 || !e.snd.Grow(size-headerSize) || e.snd.NextLen() != size-headerSize {
		return // not enough unsent data behind the next packet: probe later
	}
	e.pmtu.probe = size
	e.pmtu.probeSeq = e.snd.NextSeq()
	e.stats.PMTUProbes++
}

// probeAcked ends a probe that ack (the first unacknowledged number) covers.
func (e *Endpoint) probeAcked(ack seqno.Seq) {
	p := &e.pmtu
	p.heard = e.lastRecv // advanceAck runs on ACK progress
	if p.lostProbe && seqno.Offset(p.lostSeq, ack) > 0 {
		p.lostProbe = false
	}
	if p.probe == 0 || seqno.Offset(p.probeSeq, ack) <= 0 {
		return
	}
	size := p.probe
	p.probe, p.fails = 0, 0
	p.triedMax = true
	if size > p.size {
		p.why = "probe delivered"
		e.setPacketSize(size)
		// Data written before the size grew (a bulk writer fills the whole send buffer at once,
		// before the first probe returns) leaves at the new size too: without this the first
		// SendBuffer bytes go as base-size packets, each of which a UDT4 receiver ACKs.
		e.snd.StartRecut()
	}
}

// probeFailed ends the probe in flight as lost.
func (e *Endpoint) probeFailed(t time.Duration) {
	p := &e.pmtu
	if p.probe == 0 {
		return
	}
	if p.failSize != p.probe {
		p.failSize, p.fails = p.probe, 0
	}
	p.fails++
	p.lostProbe, p.lostSeq = true, p.probeSeq
	e.stats.PMTUProbeLosses++
	if p.fails >= MaxProbes {
		p.hi = min(p.hi, p.probe-1)
		p.fails = 0
		p.triedMax = true // the optimistic size failed: binary search below it
	}
	p.probe = 0
	e.nextProbe(t) // may complete the search
}

// recutChunk is the unsent bytes a release re-cuts at most (about; at least a packet): conn's
// bound on what one hold of a connection's lock copies, as one Write step (256 KiB). The call
// that changes the size, and a step that ends a pass, also walk the unsent packets' lengths
// (buffer.SendBuffer.StartRecut's layout: 0.26–0.55 ms for a 45 MB backlog, against 7–19 ms
// for the whole copy).
const recutChunk = 256 << 10

// lowerSize makes size (< the current size) the size of new packets and queues every packet in
// flight above it for retransmission (to leave with fragmentation allowed).
func (e *Endpoint) lowerSize(size int) {
	p := &e.pmtu
	p.probe, p.fails = 0, 0
	e.setPacketSize(size)
	e.snd.StartRecut() // the unsent packets have no numbers yet: cut them to fit
	first, n := e.sndLastAck(), e.inFlight()
	for k := 0; k < n; k++ {
		s := first.Add(k)
		if pl, _, ok := e.snd.Packet(s); ok && len(pl)+headerSize > size {
			e.addLoss(s, s)
			e.dlv.markBlind(s, s)
		}
	}
}

// blackHole runs at a retransmission timeout: above Base, fall back to it (see above) when
// nothing of ours reached the receiver (no NAK, no ACK progress) since the previous expiry,
// which a path that only loses packets at random rarely does. The packets in flight are not
// re-queued: the timer's go-back-N sends them again, and being longer than the size now they go
// fragmentable.
func (e *Endpoint) blackHole(t time.Duration) {
	p := &e.pmtu
	prev := p.expiry
	p.expiry = t
	if !p.on || p.size <= p.base || p.heard >= prev {
		return
	}
	e.stats.PMTUBlackHoles++
	p.why = "retransmission timeouts without a word from the receiver: black hole suspected"
	p.hi = min(p.hi, p.size-1)
	p.done = false
	p.probe, p.fails = 0, 0
	e.setPacketSize(p.base)
	e.snd.StartRecut()
	e.nextProbe(t)
}

// OnPathMTU takes the kernel's largest datagram to the peer (its path MTU less the IP and UDP
// headers, after an ICMP "packet too big" or a send refused with EMSGSIZE). A size below the
// current one replaces it and tops the search; a larger one changes nothing.
func (e *Endpoint) OnPathMTU(now time.Time, maxPacket int) {
	p := &e.pmtu
	if !e.active() || maxPacket <= 0 {
		return
	}
	if p.probe > maxPacket {
		e.probeFailed(e.since(now))
	}
	if maxPacket >= p.size {
		if maxPacket < p.hi {
			// Probe the size the kernel named first (RFC 8899 §4.6.2: a PTB may select the next
			// probe size): most often the path takes exactly that.
			p.hi, p.triedMax, p.done = maxPacket, false, false
		}
		return
	}
	size := max(maxPacket, minPacket)
	p.hi, p.done, p.restartAt = size, true, e.since(now)+raiseTimer
	p.why = "the kernel's path MTU fell (ICMP or EMSGSIZE)"
	e.lowerSize(size)
}

// OnTooBig takes a send of a size-byte packet that the local stack refused (EMSGSIZE) when the
// kernel's path MTU is not known (0 from udpio.MaxDatagram): the path is below size. A probe
// fails for good; a refused packet at or below the current size falls back to Base and searches
// below it.
func (e *Endpoint) OnTooBig(now time.Time, size int) {
	p := &e.pmtu
	if !e.active() || size <= 0 {
		return
	}
	t := e.since(now)
	if p.probe != 0 && size >= p.probe {
		p.hi = min(p.hi, p.probe-1)
		p.fails = 0
		p.lostProbe, p.lostSeq = true, p.probeSeq
		p.probe = 0
		e.stats.PMTUProbeLosses++
		e.nextProbe(t)
		return
	}
	if size > p.size {
		return // a packet cut before an earlier fall: it is resent fragmentable
	}
	p.hi, p.done = min(p.hi, size-1), false
	p.why = "a send refused as too big (EMSGSIZE)"
	e.lowerSize(min(p.base, size-1))
	e.nextProbe(t)
}

// PathMTUEvent returns the current packet size, the number of changes so far and what caused the
// last one.
func (e *Endpoint) PathMTUEvent() (size int, changes uint64, why string) {
	return e.pmtu.size, e.pmtu.changes, e.pmtu.why
}

// nakRangesFor is the most loss ranges (two words each) one NAK carries: what fits in a packet of
// the base size.
func nakRangesFor(cfg Config) int {
	size := cfg.MSS - udpIPOverhead
	if b := cfg.PathMTU.Base; b > 0 {
		size = min(size, max(b, minPacket))
	}
	return (size - headerSize) / 8
}

// newSendBuffer makes the send buffer: Config.SendBuffer bytes at every packet size the search
// may use (down to its base), in packets of up to payload bytes.
func newSendBuffer(cfg Config, payload int, isn seqno.Seq) *buffer.SendBuffer {
	minPayload := payload
	if b := cfg.PathMTU.Base; b > 0 {
		minPayload = min(payload, max(b, minPacket)-headerSize)
	}
	if minPayload == payload {
		return buffer.NewSendBuffer(cfg.SendBuffer, payload, isn)
	}
	return buffer.NewSendBufferSized(cfg.SendBuffer, payload, minPayload, isn)
}

// withoutProbe removes path MTU probes from loss ranges a NAK reported, so that the congestion
// controller never sees a probe's loss (RFC 8899 §4.2: the loss of a probe is not a sign of
// congestion): the probe in flight and the last one that failed (a "packet too big" report may
// end a probe before the receiver's NAK of it arrives). rs is edited in place; the result may be
// empty.
func (e *Endpoint) withoutProbe(rs []congestion.Range) []congestion.Range {
	p := &e.pmtu
	if p.probe != 0 {
		rs = withoutSeq(rs, p.probeSeq)
	}
	if p.lostProbe {
		rs = withoutSeq(rs, p.lostSeq)
	}
	return rs
}

// withoutSeq removes s from the ranges rs, splitting the range that holds it.
func withoutSeq(rs []congestion.Range, s seqno.Seq) []congestion.Range {
	w := uint32(s)
	for i, r := range rs {
		if seqno.Offset(seqno.SeqFromWire(r.First), s) < 0 || seqno.Offset(s, seqno.SeqFromWire(r.Last)) < 0 {
			continue
		}
		switch {
		case r.First == w && r.Last == w:
			return append(rs[:i], rs[i+1:]...)
		case r.First == w:
			rs[i].First = uint32(s.Inc())
		case r.Last == w:
			rs[i].Last = uint32(s.Dec())
		default: // split around it: the rest of the range stays a loss
			tail := congestion.Range{First: uint32(s.Inc()), Last: r.Last}
			rs[i].Last = uint32(s.Dec())
			rs = append(rs, tail)
		}
		return rs
	}
	return rs
}
