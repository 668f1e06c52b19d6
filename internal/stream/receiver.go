package stream

import (
	"time"

	"github.com/udtgo/udt/internal/buffer"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// onData processes one data packet (spec §4.4).
func (e *Endpoint) onData(t time.Duration, now time.Time, b []byte) {
	seq := seqno.SeqFromWire(be.Uint32(b))
	payload := b[headerSize:]
	if len(payload) == 0 || len(payload) > e.payloadSize {
		e.stats.Drops.Malformed++
		return
	}
	e.lastRecv, e.lastData = t, t
	e.stats.PktRecv++
	e.cc.OnPacketReceived(now, uint32(seq), len(b))
	e.arrivals.OnArrival(now, seq)
	// The receive buffer accepts [read point, read point + RecvBuffer) once each (spec §4.4).
	ts := be.Uint32(b[8:])
	ackPoint := e.rcv.AckSeq()
	switch err := e.insert(seq, b, payload); err {
	case nil:
	case buffer.ErrBeyondWindow:
		e.stats.Drops.OutOfWindow++
		return
	default: // ErrTooOld (already read) or ErrDuplicate; ErrLength was checked above
		e.stats.Drops.Duplicate++
		e.onDuplicate(t, seq, ts)
		return
	}
	e.stats.BytesRecv += uint64(len(payload))
	e.traceReceived(seq, len(payload))
	if d := seqno.Offset(e.lrsn, seq); d > 1 {
		// A gap: [lrsn+1, seq−1] is missing. It is reported once it has outlived the reordering
		// window (at once while the window is zero: spec §2.4's immediate NAK); reorder.go.
		first, last := e.lrsn.Inc(), seq.Dec()
		e.lrsn = seq
		e.onGap(t, now, first, last, ts)
	} else if d == 1 {
		e.lrsn = seq
	} else {
		e.stats.PktRecvFilled++
		e.onFill(t, now, seq, ts)
		if seq == ackPoint {
			// It filled the hole at the cumulative ACK point: ACK at once (RFC 5681 §4.2, "an
			// immediate ACK ... when the incoming segment fills in all or part of a gap"). UDT4
			// has no SACK, so until this ACK the sender knows nothing of what arrived behind the
			// hole, and a window-limited sender waits for it; the timer ACK would come up to 1.25
			// ACK periods later (ackDue).
			e.ackForce = true
		}
	}
	if e.cfg.Messages {
		e.syncLRSN() // past the given-up slots after seq, if its arrival moved the ACK number beyond them
	}
	// UDT4 ACKs right after a packet shorter than its full payload (spec §4.4 step 6): the end of
	// a burst. A sender whose packets fit a path MTU below the MSS (pmtud.go) sends only such
	// packets, so here a packet is short when it is shorter than the one before it.
	if len(payload) < e.rcvLastLen {
		e.ackForce = true
	}
	e.rcvLastLen = len(payload)
	e.pktsSinceACK++
	if iv := e.ccACKInterval; iv > 0 && e.pktsSinceACK >= iv {
		e.ackForce = true
	}
	e.pktsSinceLight++
	if e.pktsSinceLight >= e.selfClockEvery() && !e.ackForce {
		e.sendSelfClockACK(t) // flow.go
	}
}

// sendLightACK sends a 1-word ACK carrying the first missing number (spec §2.3).
func (e *Endpoint) sendLightACK(t time.Duration) {
	e.pktsSinceLight = 0
	ack := e.rcv.AckSeq()
	if ack == e.rcvLastAckAck {
		return
	}
	e.ack = packet.ACK{Form: packet.ACKLight, AckNo: uint32(ack)}
	e.sendACKPacket(t, &e.ack)
	e.stats.LightACKSent++
	e.traceACKSent()
}

// ackPeriod is the full-ACK period: SYN, or the controller's shorter ACKPeriod (spec §4.1).
//
// Departure from UDT 4.11: on a path shorter than 4·SYN the period is a quarter of the smoothed
// RTT, at least minACKPeriod. A sender learns the path from its ACKs; one ACK per SYN on a 2 ms
// path arrives every fifth round trip, so a window- or model-based sender must keep five round
// trips of data in flight to bridge them (all of it queued at the bottleneck). Four ACKs per round
// trip is what a TCP receiver's every-other-segment ACK gives at a window of eight segments
// (RFC 5681 §4.2), and costs at most 1000 ACKs a second.
func (e *Endpoint) ackPeriod() time.Duration {
	p := SYN
	if e.rtt.Measured() {
		p = min(p, max(e.rtt.RTT()/4, minACKPeriod))
	}
	if c := e.ccACKPeriod; c > 0 && c < p {
		return c
	}
	return p
}

// ackQuietGrid divides the ACK period into the steps by which the timer ACK's deadline follows
// the last data packet (ackDue): a quarter, so the timer fires between one and 1.25 periods after
// it and its deadline moves at most four times a period, however fast the packets arrive.
const ackQuietGrid = 4

// minACKPeriod is the shortest timer-ACK period: UDT4's timer granularity, 1 ms (spec §4.1).
const minACKPeriod = time.Millisecond

// ackDue returns when the next timer ACK is due and whether one is armed: the time at which
// OnTimer sends it. A data packet that arrives once the ACK period has passed sends it sooner, on
// its arrival (arrivalACKDue).
//
// An ACK that leaves on the timer reports packets that arrived up to a period before it, an
// error a sender's delivery-rate samples cannot see: each sample's ACK interval
// (draft-cheng-iccrg-delivery-rate-estimation §3.3, which assumes ACKs sent on arrival) is then
// off by up to one period. On a path of a few packets per round trip that is a fifth of the
// interval, and BBR's max filter keeps the samples it shortened, above the path's rate. So the
// timer ACK waits for the next data packet after the period, as UDT 4.11's receiver does (its
// worker checks the timers after each packet it processes), and the timer itself sends it only
// once no data packet has arrived for a whole period: the flight has ended, and its last packets
// wait at most one period more than they would for a plain timer. That deadline is rounded up to
// a quarter period after the last ACK (ackQuietGrid), so that it moves a few times a period, not
// with every packet (each move re-arms the connection's runtime timer).
func (e *Endpoint) ackDue() (time.Duration, bool) {
	d, ok := e.arrivalACKDue()
	if ok && !e.ackForce && e.rcv.AckSeq() != e.rcvLastAck {
		p := e.ackPeriod()
		if quiet := e.lastData + p; quiet > d {
			g := max(p/ackQuietGrid, 1)
			d += (quiet - d + g - 1) / g * g
		}
	}
	return d, ok
}

// arrivalACKDue is when a data packet's arrival sends the timer ACK, and whether one is armed.
func (e *Endpoint) arrivalACKDue() (time.Duration, bool) {
	switch {
	case e.ackForce:
		return e.lastACKTime, true
	case e.rcv.AckSeq() != e.rcvLastAck:
		return e.lastACKTime + e.ackPeriod(), true
	case e.rcvLastAck != e.rcvLastAckAck:
		// Unconfirmed: repeat after RTT + 4·RTTVar (spec §2.3 suppression rule), doubling the
		// interval for each repeat of the same number so that a peer that never sends ACK2 cannot
		// keep an idle connection awake.
		iv := max(e.ackPeriod(), e.rtt.Timeout()) << min(e.ackRepeats, 7)
		return e.lastACKTime + iv, true
	}
	return 0, false
}

// checkACK sends the timer ACK if it is due: on a packet's arrival (arrival true) once the ACK
// period has passed, from OnTimer at ackDue.
func (e *Endpoint) checkACK(t time.Duration, now time.Time, arrival bool) {
	due, ok := e.arrivalACKDue()
	if !arrival {
		due, ok = e.ackDue()
	}
	if ok && due <= t {
		e.sendACK(t, now)
	}
}

// sendACK sends a full ACK (6 words) if SYN has passed since the last one, else a medium ACK
// (4 words), and records it for the ACK2 RTT sample (spec §2.3).
func (e *Endpoint) sendACK(t time.Duration, now time.Time) {
	e.ackForce = false
	e.pktsSinceACK = 0
	e.pktsSinceLight = 0
	ack := e.rcv.AckSeq()
	if ack == e.rcvLastAck {
		e.ackRepeats++
	} else {
		e.ackRepeats = 0
	}
	e.rcvLastAck = ack
	if ack == e.rcvLastAckAck {
		return // the sender already confirmed this ACK number
	}
	free := max(e.rcv.Available(), 2)
	e.ack = packet.ACK{
		AckSeq: e.acks.Store(ack, now), Form: packet.ACKMedium, AckNo: uint32(ack),
		RTT: e.rtt.RTTMicros(), RTTVar: e.rtt.RTTVarMicros(),
		AvailBuf: uint32(free),
	}
	if t-e.lastFullACK >= SYN {
		e.ack.Form = packet.ACKFull
		e.ack.RecvRate, e.ack.Capacity = uint32(e.arrivals.ReportSpeed()), uint32(e.arrivals.Bandwidth())
		e.lastFullACK = t
	}
	e.sendACKPacket(t, &e.ack)
	e.lastACKTime = t
	e.advertised = free
	e.stats.ACKSent++
	e.traceACKSent()
}

// maybeWindowUpdate sends a medium ACK with the new flow window when Read freed a significant
// part of a receive buffer whose last advertised window was small, so a sender stalled by flow
// control resumes at once instead of after a retransmission timeout.
func (e *Endpoint) maybeWindowUpdate() {
	capacity := e.rcv.Cap()
	if !e.active() || e.advertised >= capacity/2 {
		return
	}
	free := e.rcv.Available()
	if free < e.advertised+capacity/4 {
		return
	}
	t := max(e.lastRecv, e.lastSend) // Read has no clock: stamp with the latest known time
	e.rcvLastAck = e.rcv.AckSeq()
	// Not in the ACK history, because without a clock its RTT sample would be wrong.
	e.sendWindowACK(t)
}

// onACK2 takes an RTT sample from the ACK it confirms (spec §2.5).
func (e *Endpoint) onACK2(now time.Time, ackNo uint32) {
	sample, ack, ok := e.acks.Acknowledge(ackNo, now)
	if !ok {
		e.stats.Drops.UnknownACK2++
		return
	}
	e.stats.ACK2Recv++
	e.rttSample(sample)
	e.traceRTT()
	if seqno.Offset(e.rcvLastAckAck, ack) > 0 {
		e.rcvLastAckAck = ack
	}
}

// nakInterval is the periodic NAK interval: how long a reported range may stay missing before it
// is reported again. draft-gg-udt-03 §4.4 gives 4·RTT + RTTVar + SYN; here it is at most the time
// a repair needs to come back, SRTT + 4·RTTVAR (RFC 6298's bound on a round trip), plus the
// reordering window (the repair may be overtaken too). A repair that has not arrived by then was
// lost as well (RFC 8985 §6.2 reasons the same way at the sender): a UDT 4.9+ sender NAKed once
// waits for its retransmission timer, and ours hears nothing while the hole holds the ACK, so the
// draft's four round trips leave it stalled. A re-report that proves early costs one duplicate:
// a sender of ours ignores a NAK for a packet it resent less than a minimum RTT before.
func (e *Endpoint) nakInterval() time.Duration {
	return min(4*e.rtt.RTT()+e.rtt.RTTVar()+SYN, e.rtt.Timeout()+e.rcvReorderWindow())
}

// nakCheckEvery is how often the periodic NAK looks for due ranges: each missing range is
// re-reported between one and 1.25 NAK intervals after its previous report.
func (e *Endpoint) nakCheckEvery() time.Duration { return e.nakInterval() / 4 }

// checkNAK re-reports the ranges that have been missing for at least one NAK interval since their
// last report, lowest first, as many as fit in one packet. Nothing is re-reported while nothing
// has been heard from the peer since the previous re-report: a silent peer gets one, not one per
// interval until the idle timeout.
func (e *Endpoint) checkNAK(t time.Duration, now time.Time) {
	if e.rloss.Len() == 0 || t < e.nakTick+e.nakCheckEvery() {
		return
	}
	e.nakTick = t
	if e.stats.NAKPeriodic > 0 && e.lastRecv <= e.lastPeriodicNAK {
		return
	}
	e.dueRanges = e.rloss.Due(now, e.nakInterval(), e.dueRanges[:0], cap(e.nak.Ranges))
	if len(e.dueRanges) == 0 {
		return
	}
	e.nak.Ranges = e.nak.Ranges[:0]
	for _, r := range e.dueRanges {
		e.nak.Ranges = append(e.nak.Ranges, packet.SeqRange{First: uint32(r.First), Last: uint32(r.Last)})
	}
	e.markNAK()
	e.sendNAK(t)
	e.lastPeriodicNAK = t
	e.stats.NAKPeriodic++
	e.traceNAKSent()
}
