package simnet

import (
	"math/rand/v2"
	"syscall"
	"time"
)

// LinkConfig describes one direction of one hop. The zero value is an ideal link: no delay,
// unlimited rate, no loss. Stages apply in the order of the package documentation.
type LinkConfig struct {
	// Delay is the one-way propagation delay added to every packet after serialisation.
	Delay time.Duration
	// Jitter adds a uniformly distributed extra delay in [0, Jitter] to each packet. Unless
	// JitterReorders is set, a packet never arrives before its predecessor on the link (it is
	// held until then), as on a FIFO path whose delay varies.
	Jitter time.Duration
	// JitterReorders lets jitter reorder packets: each packet's arrival is independent.
	JitterReorders bool
	// JitterHold, if positive, keeps one jitter draw for every packet that leaves the queue
	// stage within the same JitterHold-long slot of time (from the link's creation), so the delay varies over time
	// (as a scheduled or shared-medium hop's does, slot by slot) instead of per packet. Without
	// it, FIFO jitter vanishes at high packet rates: each arrival waits for the latest of many
	// recent draws, so the delay stays close to Jitter and hardly varies.
	JitterHold time.Duration

	// Rate is the serialisation rate in bit/s; 0 means unlimited (no queue). A packet takes
	// (len + Overhead)·8/Rate seconds, so 1500 bytes at 12 Mbit/s take exactly 1 ms.
	Rate int64
	// Overhead is added to each datagram's length, in bytes, for the Rate computation only
	// (28 models the IPv4 and UDP headers). Default 0.
	Overhead int
	// QueueBytes limits the drop-tail queue (the packets waiting and the one being serialised)
	// in bytes of datagram; 0 means no byte limit. Used only with a Rate.
	QueueBytes int
	// QueuePackets limits the drop-tail queue in packets; 0 means no packet limit. Used only
	// with a Rate.
	QueuePackets int
	// BucketBytes, if positive, makes the Rate a token-bucket shaper, as Linux's tbf qdisc with
	// burst BucketBytes, instead of a serial link: tokens accrue at Rate up to BucketBytes, and a
	// packet leaves (in zero time) as soon as the bucket holds its size (len + Overhead), in FIFO
	// order. Back-to-back packets then pass at wire speed while the bucket lasts, which is what
	// fools packet-pair capacity estimates (UDT spec §6.2) behind real shapers. It should be at
	// least one packet's size; a smaller bucket holds a packet until its own size has accrued.
	// Used only with a Rate.
	BucketBytes int
	// ReleaseEvery, if positive, holds each packet that leaves the queue stage (or enters the
	// link, without a Rate) until the next multiple of ReleaseEvery since the link was created
	// (the ticks of links created together are in phase), then releases
	// everything held at once, in order: a relay, virtualised router or middlebox that forwards
	// on a coarse timer tick. Behind a Rate each release carries about Rate·ReleaseEvery of
	// packets back to back; on a return path it aggregates ACKs. Held packets have left the
	// drop-tail queue (they wait in the relay's own buffer, which has no limit).
	ReleaseEvery time.Duration

	// MTU drops datagrams longer than MTU bytes (UDP payload: 28 less than the IPv4 packet);
	// 0 means no limit. A datagram written with WriteFragmentable passes (as IP fragments
	// would). MTUAction says what else happens.
	MTU int
	// MTUAction is what a datagram above MTU causes besides its drop (icmp.go): nothing (a black
	// hole), an ICMP-like report to the sender, or an EMSGSIZE error from the sender's write.
	MTUAction MTUAction

	// Loss is the probability in [0, 1] that a packet is lost, independently of the others.
	Loss float64
	// Burst, if non-nil, adds Gilbert–Elliott burst loss.
	Burst *GilbertElliott
	// BurstEvery and BurstLen give a deterministic pattern: of every BurstEvery packets that
	// reach the loss stage, the last BurstLen are dropped (packets BurstEvery−BurstLen …
	// BurstEvery−1 of each cycle, counting from 0). Both must be positive to take effect.
	BurstEvery, BurstLen int

	// Reorder is the probability that a packet is held back ReorderDelay longer than it would
	// be, so that packets sent after it overtake it.
	Reorder float64
	// ReorderDelay is the extra hold of a reordered packet; 0 means 1 ms.
	ReorderDelay time.Duration
	// Duplicate is the probability that a packet arrives twice (both copies at the same time,
	// the copy second).
	Duplicate float64

	// Drop is a rule: it is called with each datagram (do not retain or modify b) and drops
	// it when it returns true. See DropUDTControl. It runs with the Network locked: it must
	// not call into the Network.
	Drop func(b []byte) bool
}

// GilbertElliott is the two-state burst-loss channel (Gilbert 1960, Elliott 1963): a Markov
// chain with a Good and a Bad state, stepped once per packet, losing packets with a
// per-state probability. The mean burst (Bad) length is 1/PBadToGood packets and the
// stationary Bad share PGoodToBad/(PGoodToBad+PBadToGood). The chain starts Good.
type GilbertElliott struct {
	PGoodToBad float64 // per-packet probability of moving Good → Bad
	PBadToGood float64 // per-packet probability of moving Bad → Good
	LossGood   float64 // loss probability in the Good state (often 0)
	LossBad    float64 // loss probability in the Bad state (1 for pure Gilbert)
}

// LinkStats are a Link's counters since it was created. Packets count datagrams, bytes count
// datagram bytes (without Overhead).
type LinkStats struct {
	Sent, SentBytes           uint64 // datagrams offered to the link
	Delivered, DeliveredBytes uint64 // datagrams that left the link, duplicates included
	DroppedDown               uint64 // dropped while the link was down (SetDown)
	DroppedMTU                uint64 // longer than MTU
	Fragmented                uint64 // longer than MTU, passed as fragments (WriteFragmentable)
	DroppedRule               uint64 // the Drop rule returned true
	DroppedLoss               uint64 // random, burst or pattern loss
	DroppedQueue              uint64 // the drop-tail queue was full
	Duplicated                uint64 // extra copies made
	Reordered                 uint64 // packets held back ReorderDelay
	QueuedPackets             int    // in the queue now (waiting or being serialised)
	QueuedBytes               int    // bytes in the queue now
	MaxQueuedBytes            int    // high-water mark of QueuedBytes
}

// Dropped is the sum of all drop counters.
func (s LinkStats) Dropped() uint64 {
	return s.DroppedDown + s.DroppedMTU + s.DroppedRule + s.DroppedLoss + s.DroppedQueue
}

// Link is one direction of one hop. Put it on paths with (*Network).Route. Methods are safe for
// concurrent use.
type Link struct {
	net *Network
	// Fields below are guarded by net.mu.
	cfg       LinkConfig
	rng       *rand.Rand
	down      bool
	geBad     bool      // Gilbert–Elliott state
	patternN  int       // position in the BurstEvery cycle
	busyUntil time.Time // when the transmitter finishes the last queued packet
	tat       time.Time // token bucket: when the bucket would be full again (GCRA's theoretical arrival time)
	lastArr   time.Time // latest in-order arrival, for FIFO jitter
	queue     []queued  // serialisation FIFO: departure time and size
	qhead     int
	qbytes    int
	st        LinkStats

	epoch   time.Time     // creation: the origin of ReleaseEvery's ticks and JitterHold's slots
	jitSlot int64         // JitterHold: the clock slot of jitDraw, +1 (0: none yet)
	jitDraw time.Duration // JitterHold: the current slot's jitter
}

type queued struct {
	dep  time.Time
	size int
}

// SetConfig replaces the link's configuration; packets already on the link keep their timing.
func (l *Link) SetConfig(cfg LinkConfig) {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	l.cfg = cfg
}

// Config returns the link's configuration.
func (l *Link) Config() LinkConfig {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	return l.cfg
}

// SetDown blackholes the link (down = true): every packet entering it is dropped, so the
// peer goes silent in this direction; packets already past the entry still arrive. SetDown(false)
// restores it.
func (l *Link) SetDown(down bool) {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	l.down = down
}

// Stats returns the link's counters, with the queue occupancy as of now.
func (l *Link) Stats() LinkStats {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	l.drainQueue(time.Now())
	s := l.st
	s.QueuedPackets, s.QueuedBytes = len(l.queue)-l.qhead, l.qbytes
	return s
}

// chance reports true with probability p, drawing only when 0 < p < 1.
func (l *Link) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	if p >= 1 {
		return true
	}
	return l.rng.Float64() < p
}

// lose runs the loss stage. Caller holds net.mu.
func (l *Link) lose() bool {
	c := &l.cfg
	lost := false
	if c.BurstEvery > 0 && c.BurstLen > 0 {
		if l.patternN >= c.BurstEvery {
			l.patternN = 0
		}
		lost = l.patternN >= c.BurstEvery-c.BurstLen
		l.patternN++
	}
	if ge := c.Burst; ge != nil {
		if l.geBad {
			if l.chance(ge.PBadToGood) {
				l.geBad = false
			}
		} else if l.chance(ge.PGoodToBad) {
			l.geBad = true
		}
		p := ge.LossGood
		if l.geBad {
			p = ge.LossBad
		}
		if l.chance(p) {
			lost = true
		}
	}
	if l.chance(c.Loss) {
		lost = true
	}
	return lost
}

// drainQueue forgets queue entries that finished serialising by now. Caller holds net.mu.
func (l *Link) drainQueue(now time.Time) {
	for l.qhead < len(l.queue) && !l.queue[l.qhead].dep.After(now) {
		l.qbytes -= l.queue[l.qhead].size
		l.queue[l.qhead] = queued{}
		l.qhead++
	}
	if l.qhead == len(l.queue) {
		l.queue, l.qhead = l.queue[:0], 0
	} else if l.qhead > 1024 && l.qhead > len(l.queue)/2 {
		n := copy(l.queue, l.queue[l.qhead:])
		l.queue, l.qhead = l.queue[:n], 0
	}
}

// txTime is the serialisation time of size bytes at the configured rate.
func (l *Link) txTime(size int) time.Duration {
	bits := int64(size+l.cfg.Overhead) * 8
	return time.Duration(bits * int64(time.Second) / l.cfg.Rate)
}

// shape returns when a packet of size bytes entering the token-bucket shaper at now leaves it:
// the generic cell rate algorithm (ITU-T I.371) with increment txTime(size) and a tolerance of
// the bucket's depth less one packet, after the previous departure (FIFO). Caller holds net.mu.
func (l *Link) shape(size int, now time.Time) time.Time {
	inc := l.txTime(size)
	tau := l.txTime(l.cfg.BucketBytes-l.cfg.Overhead) - inc // the bucket's depth in time, less this packet
	dep := now
	if t := l.tat.Add(-tau); t.After(dep) {
		dep = t
	}
	if l.busyUntil.After(dep) {
		dep = l.busyUntil
	}
	if l.tat.Before(dep) {
		l.tat = dep
	}
	l.tat = l.tat.Add(inc)
	return dep
}

// enter puts p, at position hop of its path, on the link at time now. Caller holds net.mu.
func (l *Link) enter(p *packet, hop int, now time.Time) {
	c := &l.cfg
	size := len(p.buf)
	l.st.Sent++
	l.st.SentBytes += uint64(size)
	switch {
	case l.down:
		l.st.DroppedDown++
	case c.MTU > 0 && size > c.MTU && !p.frag:
		l.st.DroppedMTU++
		if c.MTUAction == MTUReport {
			l.net.reportLocked(p, syscall.EMSGSIZE, c.MTU+udp4Overhead)
		}
	case c.Drop != nil && c.Drop(p.buf):
		l.st.DroppedRule++
	case l.lose():
		l.st.DroppedLoss++
	default:
		if c.MTU > 0 && size > c.MTU {
			l.st.Fragmented++
		}
		l.transmit(p, hop, now)
		return
	}
	putPacket(p)
}

// transmit queues, serialises and propagates p. Caller holds net.mu.
func (l *Link) transmit(p *packet, hop int, now time.Time) {
	c := &l.cfg
	size := len(p.buf)
	dep := now
	if c.Rate > 0 {
		l.drainQueue(now)
		n := len(l.queue) - l.qhead
		if (c.QueuePackets > 0 && n+1 > c.QueuePackets) || (c.QueueBytes > 0 && l.qbytes+size > c.QueueBytes) {
			l.st.DroppedQueue++
			putPacket(p)
			return
		}
		if c.BucketBytes > 0 {
			dep = l.shape(size, now)
		} else {
			if l.busyUntil.After(dep) {
				dep = l.busyUntil
			}
			dep = dep.Add(l.txTime(size))
		}
		l.busyUntil = dep
		l.queue = append(l.queue, queued{dep: dep, size: size})
		l.qbytes += size
		l.st.MaxQueuedBytes = max(l.st.MaxQueuedBytes, l.qbytes)
	}
	if c.ReleaseEvery > 0 {
		dep = nextTick(dep, l.epoch, c.ReleaseEvery)
	}
	arr := dep.Add(c.Delay)
	if c.Jitter > 0 {
		arr = arr.Add(l.jitter(dep))
	}
	if !c.JitterReorders {
		if arr.Before(l.lastArr) {
			arr = l.lastArr
		}
	}
	if l.chance(c.Reorder) {
		hold := c.ReorderDelay
		if hold <= 0 {
			hold = time.Millisecond
		}
		arr = arr.Add(hold)
		l.st.Reordered++
	} else if !c.JitterReorders {
		l.lastArr = arr
	}
	var dup *packet
	if l.chance(c.Duplicate) {
		dup = p.clone()
		l.st.Duplicated++
	}
	l.leave(p, hop, now, arr)
	if dup != nil {
		l.leave(dup, hop, now, arr)
	}
}

// leave forwards p now if it arrives now, else schedules its arrival. Caller holds net.mu.
func (l *Link) leave(p *packet, hop int, now, arr time.Time) {
	if arr.After(now) {
		l.net.schedule(p, hop, arr)
		return
	}
	l.arrived(p)
	l.net.forward(p, hop+1, now)
}

// arrived counts p as delivered by the link. Caller holds net.mu.
func (l *Link) arrived(p *packet) {
	l.st.Delivered++
	l.st.DeliveredBytes += uint64(len(p.buf))
}
