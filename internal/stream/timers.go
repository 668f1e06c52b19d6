package stream

import "time"

// rtoInterval is the time from the last ACK progress (or the previous expiry) to the next
// expiry of the retransmission timer (spec §4.5, adapted). The first expiry is a tail-loss probe
// after max(RTT + 4·RTTVar + SYN, 2·SYN); later ones are retransmission timeouts after
// N·max(RTT + 4·RTTVar + SYN, 100 ms), N = the number of expiries so far (at most 16). A
// controller's RTO replaces both (and caps the probe).
func (e *Endpoint) rtoInterval() time.Duration {
	base := e.rtt.Timeout() + SYN
	if e.rtoCount == 0 {
		pto := max(base, 2*SYN)
		if e.ccRTO > 0 {
			pto = min(pto, e.ccRTO)
		}
		return pto
	}
	if e.ccRTO > 0 {
		return e.ccRTO
	}
	return time.Duration(min(e.rtoCount, maxRTOBackoff)) * max(base, minRTO)
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

// onRTO handles an expiry of the retransmission timer with data in flight.
//
// The first expiry without ACK progress is a tail-loss probe: it retransmits the first
// unacknowledged packet (the receiver's ACK names it as missing) and the last one sent (if the
// tail was lost, its arrival exposes the gap to the receiver's immediate NAK). It costs at most two
// packets when spurious, so it does not tell the controller.
//
// Every further expiry is a retransmission timeout and tells the controller (OnTimeout, spec
// §5.4). The second probes again; from the third on, all unacknowledged packets go back into the
// loss list (UDT4's go-back-N at every expiry, spec §4.5): a receiver that re-reports its losses
// periodically, as ours does, never needs it, but a UDT 4.9+ peer does not re-report, so a lost
// NAK or retransmission is otherwise recovered one hole per expiry. Nothing is re-queued while
// the loss list is non-empty (retransmissions are still pending).
func (e *Endpoint) onRTO(t time.Duration, now time.Time) {
	e.rtoCount++
	e.rtoBase = t
	if e.rtoCount > 1 {
		e.stats.Timeouts++
		e.cc.OnTimeout(now)
		e.applyCC()
	} else {
		e.stats.Probes++
	}
	if e.sloss.Len() > 0 {
		return
	}
	first, last := e.sndLastAck(), e.sndCurrSeq()
	if e.rtoCount <= 2 {
		e.addLoss(first, first)
		e.addLoss(last, last)
	} else {
		e.addLoss(first, last)
	}
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

// trim returns the buffers' spare pages to the shared pool when the connection has been idle for
// a keep-alive interval. Pages holding data are given back as their last packet is acknowledged
// or read, so an idle connection whose data has all been acknowledged and read then holds no
// payload memory; the buffers take pages again on demand (from the pool, not per packet).
func (e *Endpoint) trim() {
	e.snd.Trim()
	e.rcv.Trim()
}
