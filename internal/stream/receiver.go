package stream

import "time"

// onData processes one data packet (spec §4.4).
func (e *Endpoint) onData(t time.Duration, now time.Time, b []byte) {
	if !e.active() {
		return
	}
	seq := be.Uint32(b) & maxSeq
	payload := b[headerSize:]
	if len(payload) == 0 || len(payload) > e.payloadSize {
		e.stats.Drops.Malformed++
		return
	}
	e.heard(t)
	e.stats.PktRecv++
	e.cc.OnPacketReceived(now, seq, len(b))
	e.arrivals.onData(t, seq)
	off := seqOff(e.rcvBase, seq)
	if off < 0 {
		e.stats.Drops.Duplicate++
		return
	}
	if int(off) >= e.rcvCap {
		e.stats.Drops.OutOfWindow++
		return
	}
	e.rcv.ensure(e.rcvBase, int(off)+1)
	if e.rcv.at(seq) != nil {
		e.stats.Drops.Duplicate++
		return
	}
	e.rcv.put(seq, payload)
	e.stats.BytesRecv += uint64(len(payload))
	if d := seqOff(e.lrsn, seq); d > 0 {
		if d > 1 {
			// A gap: [lrsn+1, seq−1] is lost. Report it at once (spec §2.4 immediate NAK).
			first, last := seqInc(e.lrsn), seqDec(seq)
			e.stats.RcvLoss += uint64(d - 1)
			e.lrsn = seq
			if !e.lossy {
				e.nakTick, e.nakTickLRSN = t, e.lrsn
			}
			e.lossy = true
			e.sendNAKRange(t, first, last)
		}
		e.lrsn = seq
	} else {
		e.stats.PktRecvFilled++
	}
	if seq == e.rcvNext {
		e.rcvNext = seqInc(e.rcvNext)
		for e.rcvNext != seqInc(e.lrsn) && e.rcv.at(e.rcvNext) != nil {
			e.rcvNext = seqInc(e.rcvNext)
		}
		e.lossy = e.rcvNext != seqInc(e.lrsn)
	}
	if len(payload) < e.payloadSize {
		e.ackForce = true // UDT4 ACKs right after a short packet (spec §4.4 step 6)
	}
	e.pktsSinceACK++
	if iv := e.cc.State().ACKInterval; iv > 0 && e.pktsSinceACK >= iv {
		e.ackForce = true
	}
	e.pktsSinceLight++
	if e.pktsSinceLight >= lightACKEvery && !e.ackForce {
		e.sendLightACK(t)
	}
}

// sendNAKRange reports [first, last] as lost.
func (e *Endpoint) sendNAKRange(t time.Duration, first, last uint32) {
	w := e.words[:0]
	if first == last {
		w = append(w, first)
	} else {
		w = append(w, first|nakRangeBit, last)
	}
	e.sendCtrl(t, ctrlNAK, 0, w)
	e.stats.NAKSent++
}

// sendLightACK sends a 1-word ACK carrying the first missing number (spec §2.3).
func (e *Endpoint) sendLightACK(t time.Duration) {
	e.pktsSinceLight = 0
	if e.rcvNext == e.rcvLastAckAck {
		return
	}
	e.sendCtrl(t, ctrlACK, 0, append(e.words[:0], e.rcvNext))
	e.stats.LightACKSent++
}

// ackPeriod is the full-ACK period: SYN, or the controller's shorter ACKPeriod (spec §4.1).
func (e *Endpoint) ackPeriod() time.Duration {
	if p := e.cc.State().ACKPeriod; p > 0 && p < SYN {
		return p
	}
	return SYN
}

// ackDue returns when the next timer ACK is due and whether one is armed.
func (e *Endpoint) ackDue() (time.Duration, bool) {
	switch {
	case e.ackForce:
		return e.lastACKTime, true
	case e.rcvNext != e.rcvLastAck:
		return e.lastACKTime + e.ackPeriod(), true
	case e.rcvLastAck != e.rcvLastAckAck:
		// Unconfirmed: repeat after RTT + 4·RTTVar (spec §2.3 suppression rule).
		return e.lastACKTime + max(e.ackPeriod(), e.rtt.rtt+4*e.rtt.rttVar), true
	}
	return 0, false
}

// checkACK sends the timer ACK if it is due.
func (e *Endpoint) checkACK(t time.Duration) {
	if d, ok := e.ackDue(); ok && d <= t {
		e.sendACK(t)
	}
}

// sendACK sends a full ACK (6 words) if SYN has passed since the last one, else a medium ACK
// (4 words), and records it for the ACK2 RTT sample (spec §2.3).
func (e *Endpoint) sendACK(t time.Duration) {
	e.ackForce = false
	e.pktsSinceACK = 0
	e.pktsSinceLight = 0
	ack := e.rcvNext
	if ack == e.rcvLastAckAck {
		e.rcvLastAck = ack
		return
	}
	e.rcvLastAck = ack
	e.ackSeqNo = (e.ackSeqNo + 1) & maxSeq
	if e.ackSeqNo == 0 {
		e.ackSeqNo = 1 // 0 marks a light ACK
	}
	free := max(e.rcvCap-int(seqOff(e.rcvBase, ack)), 2)
	w := append(e.words[:0], ack,
		uint32(e.rtt.rtt/time.Microsecond), uint32(e.rtt.rttVar/time.Microsecond), uint32(free))
	if t-e.lastFullACK >= SYN {
		w = append(w, e.arrivals.speed(), e.arrivals.bandwidth())
		e.lastFullACK = t
	}
	e.sendCtrl(t, ctrlACK, e.ackSeqNo, w)
	e.acks.store(e.ackSeqNo, ack, t)
	e.lastACKTime = t
	e.advertised = free
	e.stats.ACKSent++
}

// maybeWindowUpdate sends a medium ACK with the new flow window when Read freed a significant
// part of a receive buffer whose last advertised window was small, so a sender stalled by flow
// control resumes at once instead of after a retransmission timeout.
func (e *Endpoint) maybeWindowUpdate() {
	if !e.active() || e.advertised >= e.rcvCap/2 {
		return
	}
	free := e.rcvCap - int(seqOff(e.rcvBase, e.rcvNext))
	if free < e.advertised+e.rcvCap/4 {
		return
	}
	t := max(e.lastRecv, e.lastSend) // Read has no clock: stamp with the latest known time
	ack := e.rcvNext
	if seqOff(e.rcvLastAck, ack) > 0 {
		e.rcvLastAck = ack
	}
	e.ackSeqNo = (e.ackSeqNo + 1) & maxSeq
	if e.ackSeqNo == 0 {
		e.ackSeqNo = 1
	}
	// Not recorded in the ACK history: without a clock the RTT sample would be wrong.
	e.sendCtrl(t, ctrlACK, e.ackSeqNo, append(e.words[:0], ack,
		uint32(e.rtt.rtt/time.Microsecond), uint32(e.rtt.rttVar/time.Microsecond), uint32(free)))
	e.advertised = free
	e.stats.ACKSent++
	e.stats.WindowUpdates++
}

// onACK2 takes an RTT sample from the ACK it confirms (spec §2.5).
func (e *Endpoint) onACK2(t time.Duration, ackNo uint32) {
	rec, ok := e.acks.take(ackNo)
	if !ok {
		e.stats.Drops.UnknownACK2++
		return
	}
	e.stats.ACK2Recv++
	e.rtt.sample(t - rec.at)
	if seqOff(e.rcvLastAckAck, rec.ack) > 0 {
		e.rcvLastAckAck = rec.ack
	}
}

// nakInterval is the periodic NAK interval: 4·RTT + RTTVar + SYN (draft-gg-udt-03 §4.4).
func (e *Endpoint) nakInterval() time.Duration { return 4*e.rtt.rtt + e.rtt.rttVar + SYN }

// checkNAK re-reports the numbers that have been missing for at least one NAK interval.
func (e *Endpoint) checkNAK(t time.Duration) {
	if !e.lossy || t < e.nakTick+e.nakInterval() {
		return
	}
	limit := e.nakTickLRSN
	e.nakTick, e.nakTickLRSN = t, e.lrsn
	if seqOff(e.rcvNext, limit) < 0 {
		return
	}
	maxWords := (e.pktSize - headerSize) / 4
	w := e.words[:0]
	n := int(seqOff(e.rcvNext, limit)) + 1
	for i := 0; i < n && len(w)+2 <= maxWords; i++ {
		s := seqAdd(e.rcvNext, int32(i))
		if e.rcv.at(s) != nil {
			continue
		}
		j := i
		for j+1 < n && e.rcv.at(seqAdd(e.rcvNext, int32(j+1))) == nil {
			j++
		}
		if j == i {
			w = append(w, s)
		} else {
			w = append(w, s|nakRangeBit, seqAdd(e.rcvNext, int32(j)))
		}
		i = j
	}
	if len(w) > 0 {
		e.sendCtrl(t, ctrlNAK, 0, w)
		e.stats.NAKSent++
		e.stats.NAKPeriodic++
	}
}
