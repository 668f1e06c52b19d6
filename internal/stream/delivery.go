package stream

import (
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/seqno"
)

// Delivery accounting: the sender's own record of what it sent and what the peer has received,
// from which it computes delivery-rate samples for model-based controllers
// (congestion.DeliveryController), after draft-cheng-iccrg-delivery-rate-estimation-02 (cited
// below as "the draft"). It also tracks the bytes in flight in the draft's sense (sent, neither
// delivered nor declared lost; a retransmission counts again once sent), which such controllers'
// congestion window bounds.
//
// UDT4 acknowledges cumulatively (spec §2.3) and has no SACK, so a hole holds back the ACK of
// everything after it. The tracker reads each NAK as a selective acknowledgement: a receiver
// reports the gap [a, b] once packet b+1 has arrived (spec §4.4), so every packet up to b+1 that
// the NAK does not name, and that was never declared lost before, has been received. Packets
// declared lost earlier are delivered only by the cumulative ACK (their retransmission may not
// have arrived yet). A cumulative ACK that jumps over a repaired hole then counts only what no NAK
// had covered, and each sample's interval is at least the span over which its newly delivered
// packets were sent (a send-rate bound, like the draft's send_elapsed): a burst of ACKed packets
// that were delivered long ago never looks like bandwidth.
//
// Sequence numbers are 31-bit and wrap (spec §1.6): records are indexed by the offset from the
// first unacknowledged packet, never by comparing raw numbers.

// Packet record flags.
const (
	pktInFlight   uint16 = 1 << iota // counted in the bytes in flight
	pktAppLimited                    // sent while application-limited (the draft's P.is_app_limited)
	pktRetrans                       // transmitted more than once: its send time is ambiguous
	pktDelivered                     // delivered by a NAK read as SACK (cumulative ACKs pop records)
	pktLost                          // declared lost and not retransmitted since
	pktEverLost                      // declared lost at least once: only a cumulative ACK delivers it
	pktLate                          // acknowledged late: its ACK does not date its delivery (onCumAck)
	pktImplied                       // out of the flight: silence implies it arrived (see imply)
	pktSpurious                      // declared lost, then shown not to be (spurious)
	pktAcked                         // counted in a Delivery.NewlyAcked: known or implied received
	pktSkipped                       // a given-up message's number, never sent (skip, message.go)
	pktBlind                         // resent without the receiver's report of its loss since: any copy may be the one delivered
	pktPeerAt                        // peerAt holds the receiver's clock at deliveredAt (delivery_peer.go)
	pktPeerRepair                    // peerRepair holds the receiver's clock at repairedAt
	pktReneged                       // delivered by a NAK's reading, then shown missing (renege): counted in delivered already
)

// pktRecord is the state of one sent packet at its latest transmission (the draft's per-packet
// P.* variables, §3.2). Times are on the engine clock.
type pktRecord struct {
	sent        time.Duration // P.sent_time
	firstSent   time.Duration // P.first_sent_time: C.first_sent_time at the send
	deliveredAt time.Duration // P.delivered_time: C.delivered_time at the send
	repairedAt  time.Duration // the latest of C.delivered_time and a repair's delivery at the send (see repairTime)
	delivered   int64         // P.delivered: C.delivered at the send
	lateAt      int64         // C.late at the send (see lateBytes)
	lost        int64         // C.lost at the send
	txInFlight  int64         // bytes in flight just after the send (BBR's P.tx_in_flight)
	event       uint64        // the delivery events counted when it was sent (see spans)
	peerAt      uint32        // the receiver's header timestamp (µs) of the report that set deliveredAt
	peerRepair  uint32        // … of the report that set repairedAt
	// ord counts first transmissions: the tracker's sent count when this packet first left (a
	// skipped number takes the next packet's), so that imply's cap counts packets, not numbers.
	ord   uint32
	size  uint16 // datagram bytes (at most MSS − 28 < 2^16)
	flags uint16
}

// deliveryTracker holds a record for every packet sent and not cumulatively acknowledged, in a
// ring that grows as the flight does (up to the send buffer) and is freed when the flight is
// empty.
type deliveryTracker struct {
	base seqno.Seq // sequence number of the record at head: the first unacknowledged packet
	// sackFront is the first packet no NAK has judged yet (at or after base).
	sackFront seqno.Seq
	// impliedFront is the first packet imply has not judged yet.
	impliedFront seqno.Seq
	ring         []pktRecord
	head         int
	n            int // records: base … base+n−1
	limit        int // largest n: the send buffer in packets

	delivered       int64         // C.delivered, bytes
	lost            int64         // C.lost, bytes
	late            []lateBatch   // recent batches of late-acknowledged packets (see onCumAck)
	lateBytes       int64         // C.late: bytes acknowledged late so far (a repair's sample leaves them all out)
	newestSent      time.Duration // the latest departure of a packet delivered so far
	headMissing     bool          // an ACK that left after a NAK's frontier passed base named base missing (ackNames)
	newestOnTime    time.Duration // … of one not acknowledged late
	deliveredTime   time.Duration // C.delivered_time: when the highest known received advanced
	peer            peerClock     // the receiver's clock at deliveredTime and repairTime (delivery_peer.go)
	repairTime      time.Duration // when a retransmission was last delivered in time (a repair's ACK dates it)
	highest         seqno.Seq     // the highest sequence number known received
	hasHighest      bool
	firstSentTime   time.Duration // C.first_sent_time
	appLimited      int64         // C.app_limited: 0, or the C.delivered beyond which it clears
	inflight        int64         // bytes in flight
	inflightPkts    int           // packets in flight
	cwndLimited     bool          // the congestion window held the sender back since the last sample
	recentRTT       time.Duration // the latest RTT sample (imply waits at least this long)
	rackSent        time.Duration // the latest departure of a packet known delivered (RACK.xmit_ts)
	retransInFlight int           // records with pktRetrans and pktInFlight
	implied         int64         // bytes imply took out of the flight since the last sample
	implyLimit      int           // packets imply may take out beyond the highest known received (0: any)
	sentOrd         uint32        // first transmissions so far (pktRecord.ord), mod 2^32
	srtt, rttVar    time.Duration // RFC 6298's smoothing of the packet RTT samples (0: none yet)

	ev     deliveryEvent // the event being accumulated (begin … sample)
	events uint64        // delivery events that delivered something, so far
	spans  spanStack     // suffix minima of the events' oldest send times (see sentSince)
	onTime spanStack     // … of the packets not acknowledged late (for repairs' samples)
}

// deliveryEvent accumulates one ACK or NAK's effect (the draft's rate sample rs, §3.3).
type deliveryEvent struct {
	priorInFlight  int64
	newlyDelivered int64
	newlyAcked     int64 // newly delivered bytes not counted in a NewlyAcked before (pktAcked)
	newlyLost      int64
	lostSentFirst  time.Duration // earliest departure among the newly lost packets
	lostSentLast   time.Duration // latest departure among the newly lost packets
	lostTx         int64         // largest txInFlight among them
	newlySpurious  int64         // bytes declared lost that this event showed were not
	// The reference packet: the newly delivered one with the largest P.delivered (the draft's
	// most recently sent).
	hasRef         bool
	refDelivered   int64
	refDeliveredAt time.Duration
	refSent        time.Duration
	refFirst       time.Duration
	refLost        int64
	refTxInFlight  int64
	refFlags       uint16
	refEvent       uint64
	sent           sendRange     // departures of the newly delivered packets
	onTime         sendRange     // … of those not acknowledged late (a repair's sample counts only them)
	refLate        int64         // the reference's lateAt
	refPeer        peerStamp     // the receiver's clock at the reference's P.delivered_time (or repairedAt)
	peer           peerStamp     // … when it sent this ACK or NAK
	hasRTT         bool          // rttSent is set
	rttSent        time.Duration // send time of the newest never-retransmitted newly delivered packet
	rttSeq         int           // its offset, to pick the newest
	rttHeld        bool          // its report waited for another's (see sample)
	priorNewest    time.Duration // newestSent when the event began
	repairSent     time.Duration // the latest departure of a retransmission the event delivered
}

func newDeliveryTracker(isn seqno.Seq, limit int) *deliveryTracker {
	return &deliveryTracker{base: isn, sackFront: isn, impliedFront: isn, limit: max(limit, 1)}
}

// at returns the record at offset k from base (0 ≤ k < n).
func (d *deliveryTracker) at(k int) *pktRecord { return &d.ring[(d.head+k)&(len(d.ring)-1)] }

// grow makes room for one more record.
func (d *deliveryTracker) grow() {
	if d.n < len(d.ring) {
		return
	}
	r := make([]pktRecord, max(64, 2*len(d.ring)))
	for k := 0; k < d.n; k++ {
		r[k] = *d.at(k)
	}
	d.ring, d.head = r, 0
}

// trim frees the ring while nothing is outstanding: an idle connection keeps no records.
func (d *deliveryTracker) trim() {
	if d.n == 0 {
		d.ring, d.head = nil, 0
	}
}

// onSend records a transmission of seq at t (the draft's OnPacketSent, §3.2): the next new packet
// (base+n) or a retransmission of a tracked one; anything else is ignored.
func (d *deliveryTracker) onSend(seq seqno.Seq, size int, t time.Duration, retrans bool) {
	k := seqno.Offset(d.base, seq)
	var p *pktRecord
	switch {
	case !retrans && k == d.n && d.n < d.limit:
		d.grow()
		d.n++
		p = d.at(k)
		*p = pktRecord{size: uint16(size), ord: d.sentOrd}
		d.sentOrd++
	case retrans && k >= 0 && k < d.n:
		p = d.at(k)
		if p.flags&pktDelivered != 0 {
			return // the peer has it already: the resend tells nothing about the path
		}
		if p.flags&pktLost == 0 {
			p.flags |= pktBlind // a timer's probe: the earlier copy may still arrive
		}
		p.flags |= pktRetrans
	default:
		return
	}
	if d.inflightPkts == 0 {
		d.firstSentTime, d.deliveredTime = t, t // a new flight starts its own intervals (§3.2)
		d.peer.delivered = peerStamp{}          // … which the receiver's clock does not date
	}
	if p.flags&pktInFlight == 0 {
		p.flags |= pktInFlight
		d.inflight += int64(p.size)
		d.inflightPkts++
	}
	p.flags &^= pktLost | pktAppLimited | pktImplied
	if d.appLimited != 0 {
		p.flags |= pktAppLimited
	}
	d.stampPeer(p)
	p.sent, p.firstSent, p.deliveredAt = t, d.firstSentTime, d.deliveredTime
	p.repairedAt = max(d.deliveredTime, d.repairTime)
	p.delivered, p.lost, p.txInFlight, p.lateAt = d.delivered, d.lost, d.inflight, d.lateBytes
	p.event = d.events
}

// learnt moves C.delivered_time when an event reports a packet received beyond every one known
// before (the highest known received, seq). The draft moves it with every delivered packet, for
// TCP, whose receivers acknowledge every other segment; UDT acknowledges cumulatively, every
// 10 ms or 64 packets, so a repaired hole delivers packets received long ago, and dating their
// delivery now would stretch the next samples' data over too short an interval. The repair
// itself, a retransmission acknowledged in time, did arrive about now, so a sample whose
// reference is a repair starts its window at the previous repair's ACK (repairTime) when that is
// later; C.delivered_time does not move with it (when it did, original packets' samples counted
// packets that arrived before the repair over the short window after it, and read up to 1.33× the
// bottleneck in TestDeliverySamplesNeverExceedTheBottleneck).
func (d *deliveryTracker) learnt(seq seqno.Seq, t time.Duration) {
	if !d.hasHighest || seqno.Offset(d.highest, seq) > 0 {
		d.highest, d.hasHighest = seq, true
		d.deliveredTime = t
		d.peer.delivered = d.ev.peer
	}
}

// markAppLimited notes that the sender has nothing it may send although the congestion window
// and the pacing rate would allow it (the draft's §3.4): samples taken until what is in flight
// now has been delivered may understate the path.
func (d *deliveryTracker) markAppLimited() {
	d.appLimited = max(d.delivered+d.inflight, 1)
}

// smoothRTT folds a packet RTT sample into SRTT and RTTVAR (RFC 6298 §2: α = 1/8, β = 1/4). The
// tracker keeps its own: its samples are Karn-clean departures to their first report, while the
// engine's RTT is UDT's ACK–ACK2 measure, which the peer reports (spec §4.2).
func (d *deliveryTracker) smoothRTT(s time.Duration) {
	if s <= 0 {
		return
	}
	if d.srtt == 0 {
		d.srtt, d.rttVar = s, s/2
		return
	}
	diff := d.srtt - s
	if diff < 0 {
		diff = -diff
	}
	d.rttVar += (diff - d.rttVar) / 4
	d.srtt += (s - d.srtt) / 8
}

// rtt returns SRTT and RTTVAR, or fallback and half of it before the first sample.
func (d *deliveryTracker) rtt(fallback time.Duration) (srtt, rttVar time.Duration) {
	if d.srtt == 0 {
		return fallback, fallback / 2
	}
	return d.srtt, d.rttVar
}

// spurious notes that seq, declared lost, was not: an ACK covered it before its resend left, or
// sooner after the resend than the resend could have arrived (reorder.go). The event reports the
// bytes (Delivery.Spurious) so a controller can undo what the loss made it do, and C.lost no
// longer counts them (later samples' LostSinceSent see the net loss).
func (d *deliveryTracker) spurious(seq seqno.Seq) {
	k := seqno.Offset(d.base, seq)
	if k < 0 || k >= d.n {
		return
	}
	if p := d.at(k); p.flags&pktEverLost != 0 && p.flags&pktSpurious == 0 {
		p.flags |= pktSpurious
		d.ev.newlySpurious += int64(p.size)
		d.lost -= int64(p.size) // C.lost counts losses, not mistaken declarations
	}
}

// begin starts accumulating an ACK or NAK event.
func (d *deliveryTracker) begin() {
	d.ev = deliveryEvent{priorInFlight: d.inflight, priorNewest: d.newestSent}
}

// deliver marks the record at offset k delivered at t.
func (d *deliveryTracker) deliver(k int, p *pktRecord, t time.Duration) {
	if p.flags&pktDelivered != 0 {
		return
	}
	p.flags |= pktDelivered
	if p.flags&pktInFlight != 0 {
		p.flags &^= pktInFlight
		d.inflight -= int64(p.size)
		d.inflightPkts--
	}
	ev := &d.ev
	if p.flags&pktReneged == 0 {
		d.delivered += int64(p.size)
		ev.newlyDelivered += int64(p.size)
	}
	d.newestSent = max(d.newestSent, p.sent)
	if p.flags&pktLate == 0 {
		d.newestOnTime = max(d.newestOnTime, p.sent)
	}
	if p.flags&pktAcked == 0 {
		p.flags |= pktAcked
		ev.newlyAcked += int64(p.size)
	}
	ev.sent.add(p.sent)
	if p.flags&pktLate == 0 {
		ev.onTime.add(p.sent)
	}
	if p.flags&pktRetrans != 0 {
		ev.repairSent = max(ev.repairSent, p.sent)
	} else if !ev.hasRTT || k > ev.rttSeq {
		// Packets are delivered in sequence order within an event, so every repair counted in
		// repairSent lies below this one.
		ev.hasRTT, ev.rttSent, ev.rttSeq = true, p.sent, k
		ev.rttHeld = p.sent < ev.priorNewest || p.sent < ev.repairSent
	}
	// The draft's UpdateRateSample (§3.3): the sample follows the most recently sent packet —
	// here the most recently sent one of the best class there is (deliveryRank): an original
	// transmission, else a retransmission that dates its delivery. A repaired hole is acknowledged
	// together with the packets behind it, and on a path that loses a few percent nearly every
	// cumulative ACK repairs one; the original packets' samples are the draft's, the
	// retransmission's only a fallback for events that deliver nothing else (a sender repairing
	// many holes sends nothing else, and without samples its model would never move).
	rank, refRank := deliveryRank(p.flags), deliveryRank(ev.refFlags)
	if !ev.hasRef || rank > refRank || rank == refRank && (p.delivered > ev.refDelivered || p.delivered == ev.refDelivered && p.sent > ev.refSent) {
		ev.hasRef = true
		ev.refDelivered, ev.refDeliveredAt = p.delivered, p.deliveredAt
		if rank == 1 {
			ev.refDeliveredAt = p.repairedAt
		}
		ev.refSent, ev.refFirst = p.sent, p.firstSent
		ev.refLost, ev.refTxInFlight, ev.refFlags, ev.refEvent = p.lost, p.txInFlight, p.flags, p.event
		ev.refLate = p.lateAt
		ev.refPeer = p.peerStamp(rank == 1)
		d.firstSentTime = p.sent
	}
}

// onCumAck delivers every packet before ack and drops their records. An ack beyond the last
// record (which the engine's validation excludes) drops them all and moves base to ack.
//
// A packet acknowledged later than SRTT + SYN (the ACK period) after its departure waited behind
// a hole (or its ACKs were lost): it reached the receiver at some unknown time before. The tracker
// dates its delivery at its departure plus SRTT (the round trip it would have taken without the
// hole; fallback before the first RTT sample) and keeps the
// batch so dated: a sample whose window began after that date leaves it out of its numerator
// (see lateBefore), so the burst a repaired hole releases is not taken for bandwidth, while a
// sample whose window it falls in still counts it. A late packet is never a sample's reference:
// its ACK does not date its delivery.
func (d *deliveryTracker) onCumAck(ack seqno.Seq, t, fallback time.Duration) {
	expect, _ := d.rtt(fallback)
	late := expect + SYN // a round trip and UDT's ACK period
	off := seqno.Offset(d.base, ack)
	if off <= 0 {
		return
	}
	m := min(off, d.n)
	d.learnt(ack.Dec(), t)
	var lb lateBatch
	for k := 0; k < m; k++ {
		p := d.at(k)
		if p.flags&pktDelivered == 0 && t-p.sent > late {
			p.flags |= pktLate
			d.lateBytes += int64(p.size)
			v := p.sent + expect
			if lb.bytes == 0 {
				lb.from, lb.to = v, v
			}
			lb.from, lb.to = min(lb.from, v), max(lb.to, v)
			lb.bytes += int64(p.size)
		}
		if p.flags&pktDelivered == 0 && deliveryRank(p.flags) == 1 {
			d.repairTime = t // a repair arrived now (see learnt)
			d.peer.repair = d.ev.peer
		}
		d.deliver(k, p, t)
	}
	if lb.bytes > 0 {
		lb.event = d.events + 1 // the number sample gives this event (pushSpan)
		if len(d.late) == maxLateBatches {
			d.late = append(d.late[:0], d.late[1:]...)
		}
		d.late = append(d.late, lb)
	}
	if m > 0 {
		d.head = (d.head + m) & (len(d.ring) - 1)
		d.n -= m
	}
	d.base, d.headMissing = ack, false
	if seqno.Offset(d.sackFront, ack) > 0 {
		d.sackFront = ack
	}
	if seqno.Offset(d.impliedFront, ack) > 0 {
		// Kept at or after base: left behind (traffic whose every packet is acknowledged before
		// imply's wait), its offset would wrap positive once base is 2^30 ahead (spec §1.6) and
		// imply would skip the next 2^30 packets.
		d.impliedFront = ack
	}
}

// onLost declares [first, last] lost (queued for retransmission). Packets already delivered or
// declared lost are skipped; lost bytes leave the flight.
func (d *deliveryTracker) onLost(first, last seqno.Seq) {
	from := max(seqno.Offset(d.base, first), 0)
	to := min(seqno.Offset(d.base, last), d.n-1)
	for k := from; k <= to; k++ {
		p := d.at(k)
		if p.flags&pktDelivered != 0 {
			continue // delivered: a blind resend (go-back-N) is no report (renege takes a reading back)
		}
		p.flags |= pktEverLost
		switch {
		case p.flags&pktInFlight != 0:
			d.inflight -= int64(p.size)
			d.inflightPkts--
		case p.flags&pktImplied == 0:
			continue // declared lost already
		}
		// The receiver's report (or the cumulative ACK's, lostHeadDue) makes the next resend
		// a repair again even after a blind one; go-back-N marks its losses blind afterwards.
		p.flags = p.flags&^(pktInFlight|pktImplied|pktBlind) | pktLost
		if d.ev.newlyLost == 0 || p.sent < d.ev.lostSentFirst {
			d.ev.lostSentFirst = p.sent
		}
		d.lost += int64(p.size)
		d.ev.newlyLost += int64(p.size)
		d.ev.lostSentLast = max(d.ev.lostSentLast, p.sent)
		d.ev.lostTx = max(d.ev.lostTx, p.txInFlight)
	}
}

// ackNames notes an ACK whose number is ack after onCumAck: if ack is the first unacknowledged
// packet and a NAK's frontier beyond it (sackFront is the frontier + 1) had already arrived when
// this ACK did, the receiver sent the ACK after that NAK (reports cross the return path in
// order), so after it held a packet sent later than the head, and the head was still missing
// then (lostHeadDue). A frontier at the head itself showed the head received, not missing.
func (d *deliveryTracker) ackNames(ack seqno.Seq) {
	if ack == d.base && d.n > 0 && seqno.Offset(d.base, d.sackFront) > 1 {
		d.headMissing = true
	}
}

// renege takes back the delivery a NAK's reading gave packets in [first, last] that a report now
// shows missing: the receiver's NAK naming them, or its cumulative ACK a round trip after they left
// (lostHeadDue). A receiver reports each gap once, so a packet it names that the reading took for
// delivered had its first report lost, and the next NAK's frontier covered it. Each becomes a
// packet out of the flight and counted as received, as an implied one is, so that onLost then
// counts it lost once; its bytes stay in delivered (samples taken since counted them) and are not
// counted again when it is acknowledged (pktReneged). Linux TCP handles SACK reneging alike
// (tcp_check_sack_reneging): the data is marked lost again. A given-up message's numbers were
// never sent and are left alone.
func (d *deliveryTracker) renege(first, last seqno.Seq) {
	from := max(seqno.Offset(d.base, first), 0)
	to := min(seqno.Offset(d.base, last), d.n-1)
	for k := from; k <= to; k++ {
		if p := d.at(k); p.flags&(pktDelivered|pktSkipped) == pktDelivered {
			p.flags = p.flags&^pktDelivered | pktImplied | pktReneged
		}
	}
}

// markBlind notes that [first, last] were declared lost without the receiver's report (a
// retransmission timeout's go-back-N, a path MTU change): their resends are ambiguous, since an
// earlier copy may yet be the one delivered, and give no rate sample.
func (d *deliveryTracker) markBlind(first, last seqno.Seq) {
	from := max(seqno.Offset(d.base, first), 0)
	to := min(seqno.Offset(d.base, last), d.n-1)
	for k := from; k <= to; k++ {
		d.at(k).flags |= pktBlind
	}
}

// onNAKFrontier applies a NAK read as a selective acknowledgement: the receiver holds frontier
// (the packet after the NAK's highest range), so every packet before it that was never declared
// lost and that named(seq) does not report missing has been received. Packets before an earlier
// NAK's frontier were judged by that NAK and are not looked at again, so the cost is one pass
// over the packets sent since. A frontier never sent (an inconsistent NAK) acknowledges nothing.
func (d *deliveryTracker) onNAKFrontier(frontier seqno.Seq, named func(seqno.Seq) bool, t time.Duration) {
	f := seqno.Offset(d.base, frontier)
	if f < 0 || f >= d.n {
		return
	}
	d.learnt(frontier, t)
	for k := max(seqno.Offset(d.base, d.sackFront), 0); k <= f; k++ {
		p := d.at(k)
		if p.flags&(pktDelivered|pktEverLost) != 0 || k < f && named(d.base.Add(k)) {
			continue
		}
		d.deliver(k, p, t)
	}
	if seqno.Offset(d.sackFront, frontier) >= 0 {
		d.sackFront = frontier.Inc()
	}
}

// sackedBeforeHead reports that the event being accumulated delivered, by a NAK read as a
// selective acknowledgement, a packet sent before the latest transmission of the first
// unacknowledged one. The retransmission timer restarts then, as Linux TCP re-arms its RTO on
// SACKed data (commit 2f715c1dde6e, "tcp: do not rearm RTO when future data are sacked"): the
// receiver is alive and the path delivers, while UDT's cumulative ACK waits for a hole's repair,
// which takes a round trip or more and would otherwise let the timer expire during every repair.
// Packets sent after the head's latest transmission never restart it, so a head whose repairs
// keep being lost does not keep the timer off for ever.
func (d *deliveryTracker) sackedBeforeHead() bool {
	return d.n > 0 && d.ev.sent.any && d.ev.sent.first <= d.at(0).sent
}

// sample ends the event and returns it as a congestion.Delivery; ok is false when the event
// changed nothing a controller needs to hear of.
func (d *deliveryTracker) sample(t time.Duration, start time.Time, pktSize int) (s congestion.Delivery, ok bool) {
	ev := &d.ev
	acked := ev.newlyAcked + d.implied
	if ev.newlyDelivered == 0 && ev.newlyLost == 0 && ev.newlySpurious == 0 && ev.priorInFlight == d.inflight && acked == 0 {
		return s, false
	}
	d.implied = 0
	if d.appLimited != 0 && d.delivered > d.appLimited {
		d.appLimited = 0 // the flight sent while application-limited has been delivered (§3.4)
	}
	s = congestion.Delivery{
		NewlyDelivered: ev.newlyDelivered, NewlyAcked: acked, NewlyLost: ev.newlyLost,
		TotalDelivered: d.delivered, TotalLost: d.lost,
		InFlight: d.inflight, PriorInFlight: ev.priorInFlight,
		PacketSize: pktSize, CwndLimited: d.cwndLimited, Spurious: ev.newlySpurious,
	}
	d.cwndLimited = false
	if ev.hasRTT {
		// A held sample's packet reached the receiver before another whose arrival was reported
		// before it (a packet sent later, reported by an earlier ACK or NAK, or a repair this
		// event delivered, sent later): on a FIFO path its report waited for the other's, behind a
		// hole, so its RTT includes that wait. The tracker's own estimate keeps it, as before.
		rtt := t - ev.rttSent
		d.recentRTT = rtt
		d.smoothRTT(rtt)
		s.RTT, s.RTTHeld = rtt, ev.rttHeld
	}
	if ev.newlyLost > 0 {
		s.LostSentFirst, s.LostSentLast = start.Add(ev.lostSentFirst), start.Add(ev.lostSentLast)
		s.LostTxInFlight = ev.lostTx
	}
	if ev.hasRef {
		s.PriorDelivered = ev.refDelivered
		s.TxInFlight = ev.refTxInFlight
		s.LostSinceSent = d.lost - ev.refLost
		s.AppLimited = ev.refFlags&pktAppLimited != 0
		d.pushSpan(ev.sent.first)
		if ev.onTime.any {
			d.onTime.push(d.events, ev.onTime.first)
		} else {
			d.onTime.push(d.events, t) // nothing on time: bounds no repair's sample
		}
		switch deliveryRank(ev.refFlags) {
		case 2:
			// The draft's interval, max(send elapsed, ACK elapsed), and the span over which
			// everything counted was sent: a cumulative ACK that jumps a repaired hole counts
			// packets delivered long before, and their send times show it.
			interval := max(ev.refSent-ev.refFirst, t-ev.refDeliveredAt, ev.sent.length())
			if oldest, ok := d.sentSince(ev.refEvent); ok {
				interval = max(interval, max(ev.refSent, d.newestSent)-oldest)
			}
			interval = max(interval, d.peerInterval(interval))
			delivered := d.delivered - ev.refDelivered - d.lateBefore(ev.refEvent, ev.refDeliveredAt)
			if delivered > 0 && interval > 0 {
				s.Delivered, s.Interval = delivered, interval
			}
		case 1:
			// A repair's sample counts nothing acknowledged late (the packets behind the holes
			// its ACKs jump arrived long before, and their departures would stretch its window
			// to the hole's age), so its interval is the draft's and the span over which what it
			// counts was sent.
			interval := max(ev.refSent-ev.refFirst, t-ev.refDeliveredAt, ev.onTime.length())
			if oldest, ok := d.onTime.since(ev.refEvent); ok {
				interval = max(interval, max(ev.refSent, d.newestOnTime)-oldest)
			}
			interval = max(interval, d.peerInterval(interval))
			delivered := d.delivered - ev.refDelivered - (d.lateBytes - ev.refLate)
			if delivered > 0 && interval > 0 {
				s.Delivered, s.Interval, s.Repair = delivered, interval, true
			}
		}
	}
	return s, true
}
