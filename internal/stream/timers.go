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
	if t >= e.keepAliveDue() {
		e.sendKeepAlive(t)
		e.kaTimer = t
		e.trim()
	}
}

// Keep-alives (spec §2.2, §4.5; SRT's 1 s period, spec §9.5).
//
// Each end must hear from the other within the other's idle timeout (ours: IdleTimeout, 10 s by
// default; UDT4's: ≈ 46 s, spec §4.5), so each end must keep sending while idle, whatever the
// other end does: skipping our keep-alive because we heard one would leave the peer deaf. With
// T = min(1 s, IdleTimeout/8), two ends left alone each wake every T on their own schedule: per
// pair and interval, two timer wakeups, two keep-alives sent, two received. What can be saved is
// a timer wakeup, so an end that receives a keep-alive while it has sent nothing for 3T/4
// answers it at once, from the receive path, and its own keep-alive timer then waits 2T instead
// of T (a fallback for when the peer's keep-alives stop). The ends settle into one leading, on
// its timer every T, and one answering, whose timer (re-armed lazily: a pacer ignores later
// times, so a stale deadline still wakes it) fires about every 2T instead of every T and finds
// nothing to do. When both timers fire about together (the keep-alives cross: the peer's arrives
// within 3T/4 of our own), the end with the lower socket ID takes the longer wait once, so that
// the peer's next keep-alive arrives first and is answered.
//
// Bounds: the packets are the same (one per T each way). An answering end still sends at least
// every 2T if the leader's keep-alives stop: ≥ 4 packets per IdleTimeout of a peer configured as
// we are, ≥ 23 within UDT4's ≈ 46 s. An end never answers more often than every 3T/4, so two ends
// answering each other's answers (possible when the RTT exceeds 3T/4) send at most 4/3
// keep-alives per T: no storm. A UDT4 peer keeps-alive every ≈ 0.3 s (spec §4.5): we answer one
// in three, about every 0.9 s, and our timer never sends.

// keepAliveDue returns when our keep-alive timer fires: T after the last packet we sent, or 2T
// when that packet answered the peer's keep-alive.
func (e *Endpoint) keepAliveDue() time.Duration {
	due := e.lastSend + e.kaInterval
	if e.lastSend == e.kaReplied {
		due += e.kaInterval
	}
	return due
}

// answerKeepAlive answers a keep-alive from the peer when we have sent nothing for 3T/4.
func (e *Endpoint) answerKeepAlive(t time.Duration) {
	if t-e.lastSend < e.kaInterval*3/4 {
		if e.lastSend == e.kaTimer && e.cfg.LocalID < e.cfg.PeerID {
			e.kaReplied = e.lastSend // crossed keep-alives: give way once (see above)
		}
		return
	}
	e.sendKeepAlive(t)
	e.kaReplied = t
	e.stats.KeepAliveAnswers++
	e.trim()
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
	e.dlv.begin()
	defer e.deliveryDone(t, now)
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
		// Probes re-send two packets without declaring them lost: the delivery accounting
		// keeps them in flight (a probe is no evidence of loss).
		e.sloss.Insert(first, first)
		e.sloss.Insert(last, last)
	} else {
		e.addLoss(first, last)
	}
	e.rtoRepair, e.rtoRepairing = first.Inc(), true
}

// NextTimer returns when OnTimer should run next; zero means never (the connection is closed or
// broken). An idle, fully acknowledged connection arms only the keep-alive and dead-peer timers.
func (e *Endpoint) NextTimer() time.Time {
	if !e.active() {
		return time.Time{}
	}
	next := min(e.lastRecv+e.cfg.IdleTimeout, e.keepAliveDue())
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
	e.dlv.trim()
}
