package stream

import (
	"time"

	"github.com/udtgo/udt/congestion"
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
func (e *Endpoint) inFlight() int { return int(seqOff(e.sndLastAck, e.sndCurrSeq)) + 1 }

// sendable reports whether a packet could leave now if the pacing allowed it.
func (e *Endpoint) sendable() bool {
	if !e.active() {
		return false
	}
	if e.fl.nlost > 0 {
		return true
	}
	return e.snd.cut < e.snd.tail && e.inFlight() < e.window()
}

// Departure returns when the next data packet may leave: a time at or before now means at once,
// zero means nothing is sendable until new data, an ACK or a NAK arrives.
func (e *Endpoint) Departure() time.Time {
	if !e.sendable() {
		return time.Time{}
	}
	if e.pairNext || e.pace.idle {
		return e.at(e.lastSend)
	}
	return e.at(e.pace.next)
}

// Release encodes up to len(bufs) data packets that are due at now into bufs (each with capacity
// at least MSS−28 bytes; bufs[i] is resliced to the packet's length) and returns how many it
// wrote and when the next one is due (zero: nothing more to send until new data, an ACK or a NAK).
// Retransmissions from the sender loss list go first, then new data within min(flow window, cwnd)
// (spec §4.3). A new packet whose seq&0xF == 0 and its successor leave back to back as a packet
// pair (spec §6.2); every other packet waits one send period.
func (e *Endpoint) Release(now time.Time, bufs [][]byte) (int, time.Time) {
	t := e.since(now)
	n := 0
	for n < len(bufs) {
		if !e.sendable() {
			e.pace.idle = true
			e.pairNext = false
			return n, time.Time{}
		}
		e.pace.restart(t)
		if !e.pairNext && !e.pace.due(t) {
			return n, e.at(e.pace.next)
		}
		b := bufs[n][:cap(bufs[n])]
		if len(b) < e.pktSize {
			panic("stream: Release buffer smaller than MSS-28")
		}
		l, probe := e.packOne(t, now, b)
		bufs[n] = b[:l]
		n++
		if probe {
			e.pairNext = true
		} else {
			e.pairNext = false
			e.pace.charge(t)
		}
	}
	return n, e.Departure()
}

// packOne encodes the next packet into b and returns its length and whether it opens a pair.
func (e *Endpoint) packOne(t time.Duration, now time.Time, b []byte) (int, bool) {
	var seq uint32
	var p *sentPkt
	probe := false
	retrans := false
	if s, ok := e.nextLost(); ok {
		seq, p, retrans = s, e.fl.at(s), true
	} else {
		seq = seqInc(e.sndCurrSeq)
		if e.inFlight() >= e.fl.size() {
			e.fl.resize(e.fl.size()*2, e.sndLastAck, e.inFlight())
		}
		n := min(uint64(e.payloadSize), e.snd.tail-e.snd.cut)
		p = e.fl.at(seq)
		*p = sentPkt{off: e.snd.cut, n: uint32(n), msg: e.msgNo}
		e.snd.cut += n
		e.msgNo++
		if e.msgNo > msgMask {
			e.msgNo = 1
		}
		if e.inFlight() == 0 {
			e.rtoBase = t // the retransmission timer starts with the first unacknowledged packet
			e.rtoCount = 0
		}
		e.sndCurrSeq = seq
		probe = seq&0xF == 0
	}
	putDataHeader(b, seq, p.msg, timestamp(t), e.cfg.PeerID)
	l := headerSize + int(p.n)
	e.snd.read(b[headerSize:l], p.off)
	e.lastSend = t
	e.stats.PktSent++
	e.stats.BytesSent += uint64(p.n)
	if retrans {
		e.stats.PktRetrans++
	}
	e.cc.OnPacketSent(now, seq, l)
	e.applyCC()
	return l, probe
}

// nextLost pops the smallest number in the sender loss list that is still unacknowledged.
func (e *Endpoint) nextLost() (uint32, bool) {
	if e.fl.nlost == 0 {
		return 0, false
	}
	from := e.fl.cursor
	if seqOff(e.sndLastAck, from) < 0 {
		from = e.sndLastAck
	}
	s, ok := e.fl.firstLost(from, int(seqOff(from, e.sndCurrSeq))+1)
	if !ok {
		// Entries below the cursor cannot exist; resynchronise defensively.
		s, ok = e.fl.firstLost(e.sndLastAck, e.inFlight())
		if !ok {
			e.fl.nlost = 0
			return 0, false
		}
	}
	e.fl.setRange(s, 1, false)
	e.fl.cursor = seqInc(s)
	return s, true
}

// addLoss puts [first, last] (already within the unacknowledged range) into the sender loss list.
func (e *Endpoint) addLoss(first, last uint32) {
	e.fl.setRange(first, int(seqOff(first, last))+1, true)
	if seqOff(e.fl.cursor, first) < 0 {
		e.fl.cursor = first
	}
}

// advanceAck acknowledges everything before ack (sndLastAck < ack ≤ sndCurrSeq+1): frees the send
// buffer and drops those numbers from the loss list.
func (e *Endpoint) advanceAck(t time.Duration, ack uint32) {
	n := int(seqOff(e.sndLastAck, ack))
	last := e.fl.at(seqDec(ack))
	e.snd.head = last.off + uint64(last.n)
	e.fl.setRange(e.sndLastAck, n, false)
	e.sndLastAck = ack
	if seqOff(e.fl.cursor, ack) > 0 {
		e.fl.cursor = ack
	}
	e.rtoBase = t
	e.rtoCount = 0
}

// onACK processes an ACK (spec §2.3, §6.3). It returns false if the packet was dropped.
func (e *Endpoint) onACK(t time.Duration, now time.Time, info uint32, body []byte) bool {
	words := len(body) / 4
	if words == 0 || (words > 1 && words < 4) {
		e.stats.Drops.Malformed++
		return false
	}
	ack := be.Uint32(body)
	if ack > maxSeq {
		e.stats.Drops.Malformed++
		return false
	}
	// Never acknowledge what was not sent (UDT4 breaks the connection here: we ignore it).
	if seqOff(ack, seqInc(e.sndCurrSeq)) < 0 {
		e.stats.Drops.ForgedACK++
		return false
	}
	if words == 1 { // light ACK: self-clocking only (spec §2.3)
		e.stats.LightACKRecv++
		if d := int(seqOff(e.sndLastAck, ack)); d > 0 {
			e.flowWindow = max(e.flowWindow-d, 0)
			e.advanceAck(t, ack)
		}
		return true
	}
	e.stats.ACKRecv++
	e.sendCtrl(t, ctrlACK2, info, nil)
	e.stats.ACK2Sent++
	if seqOff(e.sndLastAck, ack) >= 0 {
		e.flowWindow = clampInt(int(int32(be.Uint32(body[12:]))), 2, e.cfg.PeerFlowWindow)
		if ack != e.sndLastAck {
			e.advanceAck(t, ack)
		}
	}
	if seqOff(e.sndLastDataAck, ack) <= 0 {
		return true // a repeated or reordered ACK
	}
	e.sndLastDataAck = ack
	if rtt := int32(be.Uint32(body[4:])); rtt > 0 {
		e.rtt.sample(time.Duration(rtt) * time.Microsecond)
	}
	if words >= 6 {
		if r := int32(be.Uint32(body[16:])); r > 0 {
			e.recvRate = (7*e.recvRate + int(r)) / 8
		}
		if bw := int32(be.Uint32(body[20:])); bw > 0 {
			e.bandwidth = (7*e.bandwidth + int(bw)) / 8
		}
	}
	e.cc.OnACK(now, congestion.ACK{
		Seq: ack, RTT: e.rtt.rtt, RTTVar: e.rtt.rttVar,
		RecvRate: e.recvRate, Bandwidth: e.bandwidth, CurrSeq: e.sndCurrSeq,
	})
	e.applyCC()
	return true
}

// onNAK processes a loss report (spec §2.4). A NAK that is malformed or names a number never sent
// is dropped whole (UDT4 breaks the connection on the latter). It returns false if dropped.
func (e *Endpoint) onNAK(t time.Duration, now time.Time, body []byte) bool {
	words := len(body) / 4
	if words == 0 {
		e.stats.Drops.Malformed++
		return false
	}
	rs := e.lossRanges[:0]
	for i := 0; i < words; i++ {
		first := be.Uint32(body[4*i:])
		last := first
		if first&nakRangeBit != 0 {
			if i+1 >= words {
				e.stats.Drops.Malformed++
				return false
			}
			first &= maxSeq
			i++
			last = be.Uint32(body[4*i:])
			if last&nakRangeBit != 0 || seqOff(first, last) < 0 {
				e.stats.Drops.Malformed++
				return false
			}
		}
		if seqOff(last, e.sndCurrSeq) < 0 || seqOff(e.sndLastAck, first) < -maxWindow {
			e.stats.Drops.ForgedNAK++
			return false
		}
		if len(rs) < cap(rs) {
			rs = append(rs, congestion.Range{First: first, Last: last})
		}
	}
	e.lossRanges = rs
	e.stats.NAKRecv++
	e.cc.OnLoss(now, congestion.Loss{Ranges: rs, CurrSeq: e.sndCurrSeq})
	e.applyCC()
	for _, r := range rs {
		if seqOff(e.sndLastAck, r.Last) < 0 {
			continue // already acknowledged
		}
		first := r.First
		if seqOff(e.sndLastAck, first) < 0 {
			first = e.sndLastAck
		}
		e.stats.SndLoss += uint64(seqOff(first, r.Last)) + 1
		e.addLoss(first, r.Last)
	}
	return true
}
