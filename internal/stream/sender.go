package stream

import (
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// window is the number of packets allowed in flight: min(flow window, cwnd) (spec §4.3).
func (e *Endpoint) window() int {
	w := e.flowWindow
	if e.cwnd > 0 && e.cwnd < w {
		w = e.cwnd
	}
	return w
}

// inFlight is the number of packets sent and not yet acknowledged.
func (e *Endpoint) inFlight() int { return e.snd.InFlight() }

// sndLastAck is the first unacknowledged sequence number (light ACKs included).
func (e *Endpoint) sndLastAck() seqno.Seq { return e.snd.AckSeq() }

// sndCurrSeq is the largest sequence number sent (the ISN − 1 before the first packet).
func (e *Endpoint) sndCurrSeq() seqno.Seq { return e.snd.NextSeq().Dec() }

// sendable reports whether a packet could leave now if the pacing allowed it.
func (e *Endpoint) sendable() bool {
	if !e.active() {
		return false
	}
	if e.sloss.Len() > 0 {
		return true
	}
	if e.awaitingPeer && !e.snd.Stub(e.snd.NextSeq()) {
		// No new data into a path silent since a timer expiry (timers.go). A given-up message's
		// stub is let through: it carries no data, and it is what lets the receiver apply the
		// drop request that names the numbers before it (a receiver holds a drop request until a
		// packet at or past its last number arrives), so that it can ACK again; when the probes
		// the timer sends are themselves given-up numbers (expireMessages takes them off the
		// loss list), nothing else would ever leave.
		return false
	}
	if e.snd.Unsent() == 0 || e.snd.Recutting() { // new data waits for the re-cut (pmtud.go)
		return false
	}
	if e.dcc != nil {
		// A delivery-based controller's window bounds the packets in the network (neither
		// delivered nor declared lost); the flow window bounds what the peer must buffer.
		return e.inFlight() < e.flowWindow && (e.cwnd == 0 || e.dlv.inflightPkts < e.cwnd)
	}
	return e.inFlight() < e.window()
}

// noteAppLimited notes why the sender stopped: held back by the congestion window, or
// application-limited when it has nothing it may send while the congestion window would allow more (draft-cheng-iccrg-delivery-rate-
// estimation §3.4): no data (or none within the peer's flow window, which is the receiving
// application's limit, not the path's) and no retransmission pending.
func (e *Endpoint) noteAppLimited() {
	if e.dcc == nil || !e.active() || e.sloss.Len() > 0 {
		return
	}
	if e.cwnd > 0 && e.dlv.inflightPkts >= e.cwnd {
		e.dlv.cwndLimited = true
		return
	}
	if e.snd.Unsent() == 0 || e.inFlight() >= e.flowWindow {
		e.dlv.markAppLimited()
	}
}

// deliveryDone ends a delivery-accounting event and tells a delivery-based controller about it.
func (e *Endpoint) deliveryDone(t time.Duration, now time.Time) {
	e.dlv.imply(t, e.rtt.RTT())
	s, ok := e.dlv.sample(t, e.start, e.pmtu.size) // the size packets are cut at now (pmtud.go)
	if ok && e.dcc != nil {
		e.traceDelivery(&s)
		e.dcc.OnDelivery(now, s)
		e.applyCC()
	}
}

// implyNow runs the delivery tracker's imply outside an ACK or NAK (at a release) and tells
// the delivery-based controller what it took out of the flight (congestion.Delivery.NewlyAcked),
// as Linux's BBR grows its window by SACKed segments (tcp_bbr.c's bbr_set_cwnd takes
// rs->acked_sacked): a UDT receiver ACKs every 10 ms or 64 packets, and not at all past a hole
// until its repair, so imply usually learns of an arrival before any ACK says so.
func (e *Endpoint) implyNow(t time.Duration, now time.Time) {
	e.dlv.begin()
	e.dlv.imply(t, e.rtt.RTT())
	if e.dlv.implied > 0 {
		e.deliveryDone(t, now)
	}
}

// Departure returns when the next data packet may leave: a time at or before now means at once,
// zero means nothing is sendable until new data, an ACK or a NAK arrives. While the unsent
// packets are being cut again after a packet size change (pmtud.go) it is due at once: each
// release does a step of that.
func (e *Endpoint) Departure() time.Time {
	if e.snd.Recutting() && e.active() {
		return e.at(e.lastSend) // due: the next release re-cuts another chunk (pmtud.go)
	}
	if !e.sendable() {
		return time.Time{}
	}
	next := e.sched.Next()
	if e.pairNext || next.IsZero() {
		return e.at(e.lastSend)
	}
	return next
}

// Release encodes up to len(bufs) data packets that are due at now into bufs (each with capacity
// at least MSS−28 bytes; bufs[i] is resliced to the packet's length) and returns how many it
// wrote and when the next one is due (zero: nothing more to send until new data, an ACK or a NAK).
// Retransmissions from the sender loss list go first, then new data within min(flow window, cwnd)
// (spec §4.3). Departures follow the controller's period through a pacer.Scheduler; unless the
// controller declines them (congestion.PacketPairer), a new packet whose seq&0xF == 0 and its
// successor leave back to back as a packet pair (spec §6.2), the successor taking the next slot
// of the schedule so that the average rate is unchanged.
func (e *Endpoint) Release(now time.Time, bufs [][]byte) (int, time.Time) {
	return e.release(now, bufs, nil, nil)
}

// ReleaseViews is Release without copying payloads, for a caller that sends from the send
// buffer's own memory (a gathering write): packet i is hdrs[i] (its header, written into the
// caller's buffer, which needs a capacity of at least 16 bytes; hdrs[i] is resliced to 16)
// followed by payloads[i], a slice of the send buffer. len(payloads) must be at least len(hdrs).
// A call that releases packets pins the send buffer (buffer.SendBuffer.Pin): those payloads stay
// unchanged, even if ACKs free their packets, until the caller's Unpin, which must follow each
// such call once the send is done. The batch ends after a packet longer than the packet size, as
// Release's does.
func (e *Endpoint) ReleaseViews(now time.Time, hdrs, payloads [][]byte) (int, time.Time) {
	n, next := e.release(now, nil, hdrs, payloads[:len(hdrs)])
	if n > 0 {
		e.snd.Pin()
	}
	return n, next
}

// Unpin ends the pin of one ReleaseViews call that released packets: their payloads may change
// from now on. It reports whether it freed send-buffer space (packets acknowledged while pinned,
// which Free and CanWrite did not count until now): a writer blocked on a full buffer may then
// need waking, though no Effects said so.
func (e *Endpoint) Unpin() bool { return e.snd.Unpin() > 0 }

// release is Release (bufs) or ReleaseViews (hdrs, payloads).
func (e *Endpoint) release(now time.Time, bufs, hdrs, payloads [][]byte) (int, time.Time) {
	limit := len(bufs)
	if hdrs != nil {
		limit = len(hdrs)
	}
	t := e.since(now)
	e.traceRelease(now)
	if e.dcc != nil {
		e.implyNow(t, now)
	}
	if e.snd.Recutting() {
		e.snd.RecutStep(recutChunk) // pmtud.go
	}
	n := 0
	for n < limit {
		e.expireMessages(t)
		if !e.sendable() {
			if e.snd.Recutting() {
				// More to re-cut: not application-limited, and due again at once, after any other
				// flow of the pacer due now (a release that sends nothing and asks for now itself
				// is a stall the pacer defers by pacer.StallDelay, 1 ms).
				return n, now.Add(time.Nanosecond)
			}
			e.pairNext = false
			e.notePause() // applimit.go
			e.noteAppLimited()
			e.blocked = true
			return n, time.Time{}
		}
		if e.blocked {
			// Sendable again after a window or application stall: no catch-up for the stall.
			e.blocked = false
			e.sched.Restart(now)
		}
		if e.pairNext {
			e.sched.Force(now, 1)
		} else if e.sched.Release(now, 1) == 0 {
			return n, e.sched.Next()
		}
		var l int
		var probe bool
		if hdrs != nil {
			h := hdrs[n][:headerSize]
			payloads[n], l, probe = e.packOne(t, now, h)
			hdrs[n] = h
		} else {
			b := bufs[n][:cap(bufs[n])]
			if len(b) < e.pktSize {
				panic("stream: Release buffer capacity below MSS-28")
			}
			var payload []byte
			payload, l, probe = e.packOne(t, now, b)
			copy(b[headerSize:l], payload)
			bufs[n] = b[:l]
		}
		n++
		e.pairNext = probe
		if l > e.pmtu.size {
			break // a probe or a packet cut before the size fell: conn sends it alone (pmtud.go)
		}
	}
	return n, e.Departure()
}

// packOne encodes the next packet's header into b[:headerSize] and returns its payload (a slice of
// the send buffer, to follow the header on the wire), the packet's length and whether it opens a
// pair.
func (e *Endpoint) packOne(t time.Duration, now time.Time, b []byte) ([]byte, int, bool) {
	var (
		seq     seqno.Seq
		payload []byte
		msg     seqno.Msg
	)
	probe, retrans := false, false
	for {
		s, ok := e.sloss.PopFront()
		if !ok {
			break
		}
		// The loss list holds only unacknowledged numbers already sent (advanceAck clips it and
		// NAKs are validated), so the lookup cannot fail; if it did, the number is skipped.
		if payload, msg, ok = e.snd.Packet(s); ok {
			seq, retrans = s, true
			break
		}
	}
	if retrans && e.pmtu.probe != 0 && seq == e.pmtu.probeSeq {
		e.probeFailed(t) // the path MTU probe was lost (pmtud.go)
	}
	if !retrans {
		if e.inFlight() == 0 {
			e.rtoBase = t // the retransmission timer starts with the first unacknowledged packet
			e.rtoCount = 0
		}
		e.startProbe(t)                     // may lengthen the next packet into a probe (pmtud.go)
		seq, payload, msg, _ = e.snd.Next() // sendable() checked that one is unsent
		probe = e.pairs && seq&0xF == 0     // a packet pair (spec §6.2), unless declined (wantsPairs)
		e.noteFirstAfterPause(seq)
	}
	putDataHeader(b, seq, msg, timestamp(t), e.cfg.PeerID)
	l := headerSize + len(payload)
	if e.cfg.Messages {
		l = e.messageHeader(b, seq, msg, l)
	}
	e.lastSend = t
	e.sent.onSend(seq, t, retrans)
	e.stats.PktSent++
	e.stats.BytesSent += uint64(len(payload))
	if retrans {
		e.stats.PktRetrans++
	}
	e.dlv.onSend(seq, l, t, retrans)
	e.traceSent(seq, len(payload), retrans)
	e.cc.OnPacketSent(now, uint32(seq), l)
	e.applyCC()
	return payload[:l-headerSize], l, probe
}

// addLoss puts [first, last] into the sender loss list; numbers already acknowledged are clipped.
func (e *Endpoint) addLoss(first, last seqno.Seq) int {
	n, err := e.sloss.Insert(first, last)
	if err != nil { // validated by the callers: cannot happen
		e.stats.Drops.ForgedNAK++
		return n
	}
	e.dlv.onLost(first, last)
	e.traceLost(first, last, n)
	return n
}

// advanceAck acknowledges everything before ack (sndLastAck < ack ≤ sndCurrSeq+1): frees the send
// buffer and drops those numbers from the loss list.
func (e *Endpoint) advanceAck(t time.Duration, ack seqno.Seq) {
	e.ackSent(t, ack)
	if _, err := e.snd.Ack(ack); err != nil { // validated by the callers: cannot happen
		e.stats.Drops.ForgedACK++
		return
	}
	e.dlv.onCumAck(ack, t, e.rtt.RTT())
	e.probeAcked(ack) // a delivered path MTU probe confirms its size (pmtud.go)
	e.sloss.RemoveBefore(ack)
	e.rtoBase = t
	// Progress that only the timer's own repair explains (the ACK moved no further than the
	// first unacknowledged packet the last expiry re-sent) does not reset the escalation: a UDT
	// 4.9+ receiver NAKs each loss once, so when retransmissions are lost too, resetting here
	// would recover one packet per expiry instead of reaching go-back-N (found against UDT 4.11).
	if e.rtoCount > 0 && e.rtoRepairing && seqno.Offset(ack, e.rtoRepair) >= 0 {
		return
	}
	e.rtoCount = 0
	e.rtoRepairing = false
	e.rtoGoBack = false
}

// onACK processes an ACK (spec §2.3, §6.3). It returns false if the packet was dropped.
func (e *Endpoint) onACK(t time.Duration, now time.Time, b []byte) bool {
	a := &e.ack
	if err := a.Decode(b); err != nil {
		e.stats.Drops.Malformed++
		return false
	}
	ack := seqno.SeqFromWire(a.AckNo)
	// Never acknowledge what was not sent (UDT4 breaks the connection here: we ignore it).
	if seqno.Offset(ack, e.snd.NextSeq()) < 0 {
		e.stats.Drops.ForgedACK++
		return false
	}
	e.dlv.begin()
	e.dlv.peerReport(be.Uint32(b[8:]), t)
	if a.Form == packet.ACKLight { // self-clocking only (spec §2.3)
		e.stats.LightACKRecv++
		if d := seqno.Offset(e.sndLastAck(), ack); d > 0 {
			e.flowWindow = max(e.flowWindow-d, 0)
			e.advanceAck(t, ack)
			e.traceACKReceived()
		}
		e.dlv.ackNames(ack)
		e.peerAnswered()
		e.checkLostRepair(t, t)
		e.deliveryDone(t, now)
		return true
	}
	e.stats.ACKRecv++
	if a.AckSeq != 0 { // 0: a window update, not in the peer's ACK history
		e.sendACK2(t, a.AckSeq)
	}
	if d := seqno.Offset(e.sndLastAck(), ack); d >= 0 {
		e.flowWindow = clampInt(int(int32(a.AvailBuf)), 2, e.cfg.PeerFlowWindow)
		if d > 0 {
			e.advanceAck(t, ack)
		}
	}
	e.dlv.ackNames(ack)
	e.peerAnswered()
	e.checkLostRepair(t, t)
	e.deliveryDone(t, now)
	if seqno.Offset(e.sndLastDataAck, ack) <= 0 {
		return true // a repeated or reordered ACK
	}
	e.sndLastDataAck = ack
	peerRTT := e.rttPeerField(a.RTT, a.RTTVar)
	if a.Form == packet.ACKFull {
		e.foldPeerRates(ack, a.RecvRate, a.Capacity) // applimit.go
	}
	rcvRate, bandwidth := e.measuredPeerRates()
	e.cc.OnACK(now, congestion.ACK{
		Seq: uint32(ack), RTT: e.rtt.RTT(), RTTVar: e.rtt.RTTVar(), PeerRTT: peerRTT,
		RecvRate: rcvRate, Bandwidth: bandwidth, CurrSeq: uint32(e.sndCurrSeq()),
	})
	e.applyCC()
	e.traceACKReceived()
	return true
}

// onNAK processes a loss report (spec §2.4). A NAK that is malformed or names a number never sent
// is dropped whole (UDT4 breaks the connection on the latter). It returns false if dropped.
func (e *Endpoint) onNAK(now time.Time, b []byte) bool {
	if len(b) < headerSize+4 {
		e.stats.Drops.Malformed++
		return false
	}
	body := b[headerSize:]
	if limit := 4 * cap(e.nakRanges); len(body) > limit {
		body = body[:limit] // longer than any datagram of our MSS: use what fits
	}
	rs, err := packet.AppendLossList(e.nakRanges[:0], body)
	if err != nil {
		e.stats.Drops.Malformed++
		return false
	}
	e.nakRanges = rs
	curr, lastAck := e.sndCurrSeq(), e.sndLastAck()
	for _, r := range rs {
		if seqno.Offset(seqno.SeqFromWire(r.Last), curr) < 0 || seqno.Offset(lastAck, seqno.SeqFromWire(r.First)) < -maxWindow {
			e.stats.Drops.ForgedNAK++
			return false
		}
	}
	e.stats.NAKRecv++
	t := e.since(now)
	e.pmtu.heard = t // data of ours reached the receiver (pmtud.go's black-hole test)
	e.traceNAKReceived(rs)
	e.dlv.begin()
	e.dlv.peerReport(be.Uint32(b[8:]), t)
	// Only packets declared lost after the reordering window reach the controller (reorder.go).
	lr := e.declareNAKLosses(t, rs, be.Uint32(b[4:])&nakWaited != 0)
	e.peerAnswered()
	e.nakFrontier(t, rs)
	e.deliveryDone(t, now)
	if lr = e.withoutProbe(lr); len(lr) > 0 { // a lost path MTU probe is not congestion (pmtud.go)
		e.cc.OnLoss(now, congestion.Loss{Ranges: lr, CurrSeq: uint32(curr)})
		e.applyCC()
	}
	return true
}

// nakFrontier reads a NAK as a selective acknowledgement (delivery.go): the packet after its
// highest range has reached the receiver, and so has every earlier one the NAK does not name and
// that was never reported lost.
func (e *Endpoint) nakFrontier(t time.Duration, rs []packet.SeqRange) {
	if len(rs) == 0 {
		return
	}
	top := seqno.SeqFromWire(rs[0].Last)
	for _, r := range rs[1:] {
		top = seqno.Max(top, seqno.SeqFromWire(r.Last))
	}
	if seqno.Offset(top, e.sndCurrSeq()) <= 0 {
		return // the NAK names the last packet sent: nothing after it can have arrived
	}
	e.dlv.onNAKFrontier(top.Inc(), func(s seqno.Seq) bool {
		for _, r := range rs {
			if seqno.Offset(seqno.SeqFromWire(r.First), s) >= 0 && seqno.Offset(s, seqno.SeqFromWire(r.Last)) >= 0 {
				return true
			}
		}
		return false
	}, t)
	if e.dlv.sackedBeforeHead() {
		e.rtoBase = t
	}
}

// checkLostRepair re-queues the first unacknowledged packet when an ACK still names it missing
// well after it should have arrived: a repair, or an original whose NAK was lost
// (deliveryTracker.lostHeadDue); on the timer (heard: when the peer was last heard from), when the
// peer has spoken since the packet left and has still not acknowledged it by then.
func (e *Endpoint) checkLostRepair(t, heard time.Duration) {
	if due, ok := e.lostRepairDue(heard); ok && t >= due {
		first := e.sndLastAck()
		repair := e.dlv.at(0).flags&pktRetrans != 0
		e.stats.SndLoss += uint64(e.reportedLoss(first, first))
		if repair {
			e.stats.RetransLost++
		} else {
			e.stats.NAKLost++
		}
	}
}

// lostRepairWait is how long the first unacknowledged packet (a repair, or an original an ACK
// names missing, lostHeadDue) may go unacknowledged before checkLostRepair declares it lost: a
// round trip and its variation (RFC 6298's SRTT + 4·RTTVAR), a UDT4 receiver's ACK period (SYN)
// and the reordering window.
func (e *Endpoint) lostRepairWait() time.Duration {
	srtt, rttVar := e.dlv.rtt(e.rtt.RTT())
	return srtt + 4*rttVar + SYN + e.sndReorderWindow()
}

// lostRepairDue returns when checkLostRepair declares the first unacknowledged packet lost (the
// peer last heard from at heard), unless it is already queued again. The wait runs from its
// latest transmission of any kind (the sent log's): a resend the delivery tracker does not date
// (a tail-loss probe or go-back-N of a packet a NAK's reading took for delivered) still has a
// round trip to be acknowledged in. NextTimer arms it too: the test is time-based, and while that
// hole holds UDT's cumulative ACK the receiver may send nothing at all (its ACK number does not
// move), so a timer must run it, as RFC 8985 §6.2 arms one for RACK's.
func (e *Endpoint) lostRepairDue(heard time.Duration) (time.Duration, bool) {
	head := e.sndLastAck()
	if e.dlv.n == 0 || e.sloss.Len() > 0 && e.sloss.Contains(head) {
		return 0, false
	}
	wait := e.lostRepairWait()
	due, ok := e.dlv.lostHeadDue(wait, heard)
	if rec := e.sent.at(head); ok && rec != nil {
		if heard <= rec.last {
			return 0, false
		}
		due = max(due, rec.last+wait+time.Nanosecond) // a later resend is a repair: acknowledged at once
	}
	return due, ok
}

// reportedLoss declares [first, last] lost on the receiver's report (a NAK, or its cumulative ACK
// a round trip on): packets a NAK's reading took for delivered are taken back first (renege).
func (e *Endpoint) reportedLoss(first, last seqno.Seq) int {
	e.dlv.renege(first, last)
	return e.addLoss(first, last)
}

// windowImplyDue returns when the delivery tracker's imply will free room in a congestion window
// that holds the sender back (see deliveryTracker.implyDue); false when the window does not.
func (e *Endpoint) windowImplyDue() (time.Duration, bool) {
	if e.dcc == nil || e.cwnd == 0 || e.dlv.inflightPkts < e.cwnd || e.awaitingPeer ||
		e.snd.Unsent() == 0 || e.inFlight() >= e.flowWindow || !e.active() {
		return 0, false
	}
	return e.dlv.implyDue(e.rtt.RTT())
}

// wantsPairs reports whether the controller wants packet pairs (congestion.PacketPairer), looking
// through wrappers with Unwrap() Controller; a controller that does not say gets them, as from
// UDT4's sender.
func wantsPairs(c congestion.Controller) bool {
	for x := range wrapped(c) {
		if p, ok := x.(congestion.PacketPairer); ok {
			return p.PacketPairs()
		}
	}
	return true
}
