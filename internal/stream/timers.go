package stream

import "time"

// rtoInterval is the retransmission timeout (spec §4.5, adapted): the controller's RTO if set,
// else N·max(RTT + 4·RTTVar + SYN, 100 ms) with N = consecutive expiries + 1, at most 16.
func (e *Endpoint) rtoInterval() time.Duration {
	if rto := e.cc.State().RTO; rto > 0 {
		return rto
	}
	base := max(e.rtt.rtt+4*e.rtt.rttVar+SYN, minRTO)
	return time.Duration(min(e.rtoCount+1, maxRTOBackoff)) * base
}

// OnTimer runs every timer that is due at now: dead-peer detection, the ACK timer, the periodic
// NAK, the retransmission timeout and the keep-alive. Calling it early or late is harmless.
func (e *Endpoint) OnTimer(now time.Time) {
	if !e.active() {
		return
	}
	t := e.since(now)
	if idle := t - e.lastRecv; idle >= e.cfg.IdleTimeout {
		e.err = &PeerIdleError{Idle: idle}
		return
	}
	e.checkACK(t, now)
	e.checkNAK(t, now)
	if e.inFlight() > 0 && t >= e.rtoBase+e.rtoInterval() {
		e.onRTO(t, now)
	}
	if t-e.lastSend >= e.kaInterval {
		e.sendKeepAlive(t)
		e.trim()
	}
}

// onRTO handles a retransmission timeout with data in flight. The first expiry without ACK
// progress retransmits the first unacknowledged and the last sent packet (the receiver's ACK names
// the former as missing; the latter exposes any tail gap to the receiver's immediate NAK); a
// further expiry re-queues all unacknowledged packets, as UDT4 does at every expiry (spec §4.5).
func (e *Endpoint) onRTO(t time.Duration, now time.Time) {
	e.rtoCount++
	e.stats.Timeouts++
	if e.sloss.Len() == 0 {
		if e.rtoCount == 1 {
			e.addLoss(e.sndLastAck, e.sndLastAck)
			e.addLoss(e.sndCurrSeq, e.sndCurrSeq)
		} else {
			e.addLoss(e.sndLastAck, e.sndCurrSeq)
		}
	}
	e.cc.OnTimeout(now)
	e.applyCC()
	e.rtoBase = t
}

// NextTimer returns when OnTimer should run next; zero means never (the connection is closed or
// broken). An idle, fully acknowledged connection arms only the keep-alive and dead-peer timers.
func (e *Endpoint) NextTimer() time.Time {
	if !e.active() {
		return time.Time{}
	}
	next := min(e.lastRecv+e.cfg.IdleTimeout, e.lastSend+e.kaInterval)
	if d, ok := e.ackDue(); ok {
		next = min(next, d)
	}
	if e.rloss.Len() > 0 {
		next = min(next, e.nakTick+e.nakCheckEvery())
	}
	if e.inFlight() > 0 {
		next = min(next, e.rtoBase+e.rtoInterval())
	}
	return e.at(next)
}

// trim returns the memory of empty buffers to the garbage collector when the connection has been
// idle for a keep-alive interval, so that many idle connections hold little memory. The buffers
// grow again on demand (an allocation per burst, not per packet).
func (e *Endpoint) trim() {
	if e.snd.used() == 0 {
		e.snd.data = nil
	}
	if e.inFlight() == 0 && e.fl.size() > minFlight {
		e.fl.resize(minFlight, e.sndLastAck, 0)
	}
	if e.rcvBase == seqInc(e.lrsn) {
		e.rcv.spare = nil
		if len(e.rcv.slots) > minRecvRing {
			e.rcv.slots = make([][]byte, minRecvRing)
			e.rcv.mask = minRecvRing - 1
		}
	}
}
