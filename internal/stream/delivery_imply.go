package stream

import (
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

// What the delivery tracker (delivery.go) infers from time and silence: arrivals that no report
// contradicts (imply) and first unacknowledged packets that must have been lost (lostHeadDue).

// imply takes out of the flight the packets that silence shows to have arrived: UDT4 receivers
// NAK a gap as soon as a later packet arrives (spec §4.4), so a packet sent more than a round trip
// ago — RFC 6298's SRTT + 4·RTTVAR, with the latest RTT sample for SRTT when larger, so that a
// growing queue lengthens the wait — with a later packet sent that long ago too, and not reported
// missing, has reached the receiver — though a hole before it may keep every ACK from saying so
// for a round trip or more. Such a packet no longer counts in the bytes in flight, which the
// congestion window bounds; it is still delivered (and counted in rate samples) only when an ACK
// or NAK reports it, and a NAK naming it after all (its successor was lost too) declares it lost.
// Retransmissions are never implied: their hole stays open until an ACK closes it.
//
// Silence implies at most implyLimit packets beyond the highest one a report showed received
// (see implyCapped): a receiver that says nothing at all is not known to be running.
func (d *deliveryTracker) imply(t, fallback time.Duration) {
	old := t - d.implyWait(fallback)
	k := max(seqno.Offset(d.base, d.impliedFront), 0)
	last := -1 // the newest old-enough first transmission not yet implied
	for ; k < d.n; k++ {
		p := d.at(k)
		if p.flags&(pktRetrans|pktSkipped) != 0 {
			continue // a retransmission's send time is ambiguous; a skipped number was never sent
		}
		if p.sent > old {
			break
		}
		if last >= 0 {
			d.implyAt(last)
		}
		last = k
		if d.implyCapped(k) {
			break // not to be implied by silence, nor anything after it
		}
	}
	if last >= 0 {
		d.impliedFront = d.base.Add(last)
	} else if k > 0 && seqno.Offset(d.impliedFront, d.base.Add(k)) > 0 && k == d.n {
		d.impliedFront = d.base.Add(k)
	}
}

// implyWait is how long ago a packet must have been sent for imply to take it out of the flight.
func (d *deliveryTracker) implyWait(fallback time.Duration) time.Duration {
	srtt, rttVar := d.rtt(fallback)
	return max(srtt, d.recentRTT) + 4*rttVar
}

// implyDue returns when imply will next take a packet out of the flight, if it ever will without
// new packets sent: once the second first transmission at or after impliedFront is old enough
// (imply needs a later packet as old as the one it implies). Its rule is time-based, so a sender
// held back by its window must wake then (RFC 8985 §6.2 arms its reordering timer for the same
// reason): while a hole holds UDT's cumulative ACK, nothing else would.
func (d *deliveryTracker) implyDue(fallback time.Duration) (time.Duration, bool) {
	target := false // the first record imply would take out (in flight, never lost) is found
	for k := max(seqno.Offset(d.base, d.impliedFront), 0); k < d.n; k++ {
		p := d.at(k)
		if p.flags&(pktRetrans|pktSkipped) != 0 {
			continue
		}
		if target {
			return p.sent + d.implyWait(fallback), true
		}
		if p.flags&(pktInFlight|pktEverLost) != pktInFlight {
			continue // implying it changes nothing: no wake for it
		}
		if d.implyCapped(k) {
			return 0, false // only a report can move the cap
		}
		target = true
	}
	return 0, false
}

// implyCapped reports that the record at offset k lies implyLimit or more packets beyond the
// highest packet known received (from an ACK or a NAK), so that silence alone may not imply it.
// It counts packets sent, not sequence numbers: a given-up message's numbers that never left
// (skip) do not count.
//
// Imply bridges the time a hole holds UDT's cumulative ACK back: from the NAK that reports the
// packet after the hole (the highest known received) to the ACK of the repair, about two round
// trips of sending (the flight sent after that packet, then the repair's round trip), in which a
// sender within its congestion window sends at most two windows of packets; the endpoint sets the
// limit to that (0: no limit). A receiver that reports nothing at all, descheduled or overwhelmed
// (on loopback the receiver's CPU is the bottleneck), would otherwise let silence free the window
// again and again, up to the flow window: 25 000 packets queued in its socket where the window
// was a few hundred.
func (d *deliveryTracker) implyCapped(k int) bool {
	if d.implyLimit <= 0 {
		return false
	}
	f := 0 // the offset of the first packet not known received
	if d.hasHighest && seqno.Offset(d.base, d.highest) >= 0 {
		f = seqno.Offset(d.base, d.highest) + 1
	}
	if f >= k {
		return false
	}
	return d.at(k).ord-d.at(f).ord >= uint32(d.implyLimit) // ordinals rise by one per packet sent
}

func (d *deliveryTracker) implyAt(k int) {
	p := d.at(k)
	if p.flags&pktInFlight == 0 || p.flags&pktEverLost != 0 {
		return
	}
	p.flags = p.flags&^pktInFlight | pktImplied
	d.inflight -= int64(p.size)
	d.inflightPkts--
	if p.flags&pktAcked == 0 {
		p.flags |= pktAcked
		d.implied += int64(p.size)
	}
}

// lostHeadDue returns when the first unacknowledged packet, which the receiver's cumulative ACK
// names as missing, will have left more than wait ago (a round trip, its variation, the ACK period
// and the reordering window) and must have been lost, and whether it is one this rule judges (a
// given-up message's number, never sent, is not):
//
//   - a retransmission in flight: the repair was lost too. A UDT4 receiver reports a gap once;
//     without this the hole, and everything after it in both buffers, would wait for a timer or
//     the periodic NAK, about four round trips.
//   - an original transmission when an ACK that the receiver sent after it held a later packet
//     (one a NAK's frontier showed received) still names it missing: its NAK was lost (reports
//     cross the same lossy path). The next NAK's frontier then covered it, and read as a
//     selective acknowledgement it was taken as delivered; the ACK contradicts that (renege). Until this rule it
//     waited for the receiver's periodic NAK or the tail-loss probe, a round trip or more after
//     the ACKs had stopped moving, and that probe then held new data back until the peer answered
//     (testbed, 100 Mbit/s · 100 ms · 1 % each way: 8–12 such probes in 20 s, each a 10–20 ms gap
//     in the sending).
//
// Both are RFC 8985's RACK reasoning (a packet is lost once one sent after it has been delivered
// and a round trip plus the reordering window has passed since it left), with UDT4's cumulative
// ACK as the evidence for the lowest hole, where the ACK still naming a repair as missing stands
// in for a later delivery. Packets above the lowest hole are left to the receiver's NAKs: they are
// acknowledged only once it is repaired.
//
// heard is when the peer was last heard from. Only a peer heard from after the packet left can
// have shown it missing: without that, silence is no evidence (the path may be dead, which the
// retransmission timer's backoff handles), so the packet is not declared lost again and again.
func (d *deliveryTracker) lostHeadDue(wait, heard time.Duration) (time.Duration, bool) {
	if d.n == 0 {
		return 0, false
	}
	p := d.at(0)
	if heard <= p.sent {
		return 0, false
	}
	switch {
	case p.flags&(pktRetrans|pktInFlight) == pktRetrans|pktInFlight:
	case p.flags&(pktRetrans|pktLost|pktSkipped) == 0 && d.headMissing && d.newestSent > p.sent:
		// In flight, implied, or delivered by the next NAK's frontier, which covered it when
		// the NAK naming it was lost, and an ACK sent after that frontier arrived names it
		// missing (ackNames): the ACK contradicts the reading (renege). Silence is no such
		// evidence for an original: the receiver's timer ACK may trail its arrival by 1.25 ACK
		// periods and more, and an ACK lost on the way is repeated only a round trip later, so
		// a rule on time alone resent packets the receiver held (a review: on a 100 ms path,
		// an ACK that left 17.6 ms after the arrival, and a lost ACK).
	default:
		return 0, false
	}
	return p.sent + wait + time.Nanosecond, true // strictly more than wait after it left
}
