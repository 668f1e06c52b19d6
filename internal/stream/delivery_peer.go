package stream

import "time"

// The receiver's clock in delivery-rate samples. The draft's ACK elapsed (§3.3) is measured on
// the sender's clock, so a return path that holds ACKs and releases them together (ACK
// aggregation: Wi-Fi and cable uplinks, a coarse relay) or delays them unevenly shortens it by up
// to that delay variation, while the packets a report counts arrived over the receiver's longer
// interval: on a 20 ms path whose ACKs leave in 5 ms batches BBR's max filter kept samples 6–7 %
// above the link and cruised above it, a standing queue of a round trip. Every UDT packet carries
// its sender's µs clock (spec §1.2; control packets too, §1.3), and a report carries every
// arrival before it was sent, so the interval between the two reports that bound a sample, on
// the receiver's clock, is one its packets arrived over: a sample's interval is at least that,
// as the draft's send elapsed bounds it from the sender's side (peerInterval).
//
// The receiver's clock only ever lengthens an interval (lowers a sample). It is not used for a
// sample where it exceeds the sender's interval by more than a round trip (more than a return
// path's changing delay explains), nor at all while it does not keep our clock's rate
// (peerRate): a clock running fast by a factor f within that bound would lower every sample by
// f, and BBR's max filter, seeing nothing else, would settle at 1/f of the path and collapse
// once f passed its 1.25 probing gain (a review measured 8 % of a 100 Mbit/s · 20 ms path with a
// clock 1.5× fast). UDT 4.11 stamps its control packets 0 (docs/udt4-spec.md), a clock that never
// moves, so against it samples are exactly the draft's.

// peerStamp is a receiver's header timestamp in µs (it wraps every 71.6 minutes), if ok.
type peerStamp struct {
	ts uint32
	ok bool
}

// peerClock is the tracker's state of the receiver's clock.
type peerClock struct {
	delivered peerStamp // the report that last moved C.delivered_time (learnt)
	repair    peerStamp // the report that last moved repairTime
	rate      peerRate
}

// stampPeer gives a packet being sent the receiver's clock at its P.delivered_time and at its
// repairedAt (the later of C.delivered_time and repairTime), where known.
func (d *deliveryTracker) stampPeer(p *pktRecord) {
	p.flags &^= pktPeerAt | pktPeerRepair
	if s := d.peer.delivered; s.ok {
		p.flags |= pktPeerAt
		p.peerAt = s.ts
	}
	r := d.peer.delivered
	if d.repairTime > d.deliveredTime {
		r = d.peer.repair
	}
	if r.ok {
		p.flags |= pktPeerRepair
		p.peerRepair = r.ts
	}
}

// peerStamp returns the receiver's clock at the packet's P.delivered_time, or at its repairedAt
// for a repair's sample.
func (p *pktRecord) peerStamp(repair bool) peerStamp {
	if repair {
		return peerStamp{p.peerRepair, p.flags&pktPeerRepair != 0}
	}
	return peerStamp{p.peerAt, p.flags&pktPeerAt != 0}
}

// peerReport gives the event the header timestamp ts of the ACK or NAK it processes (the
// receiver's clock when it sent the report) and t, when it arrived here.
func (d *deliveryTracker) peerReport(ts uint32, t time.Duration) {
	d.ev.peer = peerStamp{ts, true}
	d.peer.rate.note(ts, t)
}

// peerInterval returns the event's interval on the receiver's clock, from the report that set
// the reference's P.delivered_time to this one, or 0 where it is unknown or not to be used:
// longer than the sender's own interval plus a round trip, or from a clock that does not keep
// our rate.
func (d *deliveryTracker) peerInterval(interval time.Duration) time.Duration {
	ev := &d.ev
	if !ev.refPeer.ok || !ev.peer.ok || !d.peer.rate.ok {
		return 0
	}
	pi := time.Duration(int32(ev.peer.ts-ev.refPeer.ts)) * time.Microsecond // the clock wraps
	if pi <= 0 || pi > interval+max(d.recentRTT, d.srtt) {
		return 0
	}
	return pi
}

// peerRate checks that the receiver's clock runs at our clock's rate. It compares the least
// offset (our arrival time − the report's timestamp: the clocks' offset plus the return path's
// delay, which ACK aggregation and queueing only raise) of consecutive epochs of peerRateEpoch:
// a drift beyond peerRateTolerance of the epoch marks the clock unusable until two epochs agree
// again. A clock is trusted until then, so that the correction serves Startup too; a broken one
// is used for its first two epochs at most.
type peerRate struct {
	last      uint32        // the latest timestamp
	g         int64         // the receiver's clock unwrapped, µs
	epoch     time.Duration // start of the current epoch (our clock); 0: none yet
	cur, prev int64         // least offset, µs, in this epoch and in the previous one
	epochs    int           // epochs completed
	ok        bool
}

const (
	// peerRateEpoch is 250 ms: a UDT receiver reports at least every 10 ms while data flows
	// (spec §3.2's ACK timer), so an epoch's least offset has some 25 reports to find the return
	// path's least delay in.
	peerRateEpoch = 250 * time.Millisecond
	// peerRateTolerance is 1 %: quartz clocks differ by parts per million, and an error of
	// 1 % lowers samples by no more than BBR's own pacing margin (draft §4.6.2, 1 %); a return
	// path whose least delay moves by more than 2.5 ms between epochs also disables the clock,
	// which only gives up the correction.
	peerRateTolerance = 0.01
)

// note folds in the timestamp ts of a report that arrived at t.
func (c *peerRate) note(ts uint32, t time.Duration) {
	if c.epoch == 0 {
		c.last, c.epoch, c.cur, c.ok = ts, max(t, 1), 1<<62, true
	}
	c.g += int64(int32(ts - c.last))
	c.last = ts
	c.cur = min(c.cur, int64(t/time.Microsecond)-c.g)
	if span := t - c.epoch; span >= peerRateEpoch {
		if c.epochs++; c.epochs >= 2 {
			drift := float64(c.cur-c.prev) / float64(span/time.Microsecond)
			c.ok = drift >= -peerRateTolerance && drift <= peerRateTolerance
		}
		c.prev, c.cur, c.epoch = c.cur, 1<<62, t
	}
}
