package stream

import "time"

// rtoInterval is the time from the last ACK progress (or the previous expiry) to the next
// expiry of the retransmission timer. The first expiry is a tail-loss probe after
// PTO = max(RTT + 4·RTTVar + SYN, 2·SYN) (RFC 9002 §6.2.1 with max_ack_delay = SYN, the
// receiver's ACK period; RFC 8985 §7). Expiry n ≥ 2 is a retransmission timeout after
// RTO·2^(n−2), RTO = max(RTT + 4·RTTVar + SYN, minRTO) (RFC 6298 §2, §5.5: the timer backs off
// exponentially), at most maxRTO. A controller's RTO replaces both bases (and caps the probe).
func (e *Endpoint) rtoInterval() time.Duration {
	base := e.rtt.Timeout() + SYN
	if e.rtoCount == 0 {
		pto := max(base, 2*SYN)
		if e.ccRTO > 0 {
			pto = min(pto, e.ccRTO)
		}
		return pto
	}
	rto := max(base, minRTO)
	if e.ccRTO > 0 {
		rto = e.ccRTO
	}
	for i := 1; i < e.rtoCount && rto < maxRTO; i++ {
		rto *= 2
	}
	return min(rto, maxRTO)
}

// OnTimer runs every timer that is due at now: dead-peer detection, the ACK timer, the periodic
// NAK, the retransmission timeout, the keep-alive and, while closing, the linger deadline and the
// Shutdown re-sends. Calling it early or late is harmless.
func (e *Endpoint) OnTimer(now time.Time) {
	t := e.since(now)
	if !e.active() {
		e.closeTimer(t)
		return
	}
	e.traceAt(now)
	if idle := t - e.lastRecv; idle >= e.cfg.IdleTimeout {
		// A port-unreachable report since the peer was last heard from is part of the
		// evidence even when the idle timeout expires first (a report late in the silence, or a
		// backed-off RTO that stretches unreachableGrace to IdleTimeout).
		_, refused := e.unreachableDue()
		e.err = &PeerIdleError{Idle: idle, Refused: refused}
		e.settle(t)
		return
	}
	if e.checkUnreachable(t) {
		e.settle(t) // a close in progress ends with the break, as at the idle timeout
		return
	}
	e.checkACK(t, now, false)
	e.checkPendingNAK(t, now)
	e.checkNAK(t, now)
	e.checkDeferred(t, now)
	// One delivery event for the lost repair's loss and what imply takes out of the flight:
	// outside an event, onLost's bytes would never reach the controller as NewlyLost.
	e.dlv.begin()
	e.checkLostRepair(t, e.lastRecv)
	if e.dcc != nil {
		e.deliveryDone(t, now)
	}
	if e.inFlight() > 0 && t >= e.rtoBase+e.rtoInterval() {
		e.onRTO(t, now)
	}
	if t >= e.keepAliveDue() {
		e.sendKeepAlive(t)
		e.kaTimer = t
		e.trim()
	}
	e.settle(t)
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
// its timer every T, and one answering, whose timer never fires while the answers keep moving
// it on (conn re-arms it exactly after every call: one wakeup per T per pair; a timer that is
// only ever moved earlier would still fire about every 2T and find nothing to do). When both
// timers fire about together (the keep-alives cross: the peer's arrives within 3T/4 of our own),
// the end with the lower socket ID takes the longer wait once, so that the peer's next
// keep-alive arrives first and is answered.
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

// keepAliveAligned is keepAliveDue rounded up to the next multiple of SYN (UDT's timer unit) on
// the wall clock (the Unix epoch's): the idle connections of a process then wake together, up to
// 100 times a second whatever their number, and one wake of the socket's timer goroutine sends
// all their keep-alives (Linux's round_jiffies for timers that need no precision). A keep-alive
// is at most SYN later than T, well within what UDT4 itself allows: it checks an idle socket's
// timers only about every 100 ms (spec §4.1, "Timer-check granularity").
func (e *Endpoint) keepAliveAligned() time.Duration {
	at := e.at(e.keepAliveDue()).UnixNano()
	if r := at % int64(SYN); r != 0 {
		at += int64(SYN) - r
	}
	return time.Unix(0, at).Sub(e.start)
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

// onRTO handles an expiry of the retransmission timer with data in flight. The timer runs from
// the latest ACK that advanced, or the latest NAK that delivered, read as SACK, a packet sent
// before the first unacknowledged packet's latest transmission (sackedBeforeHead, after Linux
// TCP's RTO re-arm on SACKed data): a repair in progress is no timeout.
//
// Every expiry sends a probe of at most two packets, never the flight: the first unacknowledged
// packet (the receiver's ACK names it as missing) and the last one sent (if the tail was lost,
// its arrival exposes the gap to the receiver's loss detection), unless retransmissions are
// still queued (they go first and probe as well). The first expiry is a tail-loss probe (RFC 8985
// §7): it costs at most two packets when spurious, so it does not tell the controller. Every
// further one is a retransmission timeout (RFC 6298 §5.4–5.6: back off, retransmit the earliest
// packet): it tells the controller (OnTimeout, spec §5.4), and from the third expiry on arms
// go-back-N for when the peer answers (peerAnswered; the second expiry only probes again, as
// UDT4's escalation here always did: a receiver of ours re-reports its losses, and a flight of
// duplicates into a congested queue costs more losses): a dead path costs two packets per expiry
// with the intervals doubling.
// From any expiry until the peer answers no new data is sent either (RFC 5681 §3.1's loss window
// of one segment after a timeout; here retransmissions only): a rate-paced sender that hears
// nothing would otherwise keep filling its window into a dead path.
func (e *Endpoint) onRTO(t time.Duration, now time.Time) {
	e.dlv.begin()
	defer e.deliveryDone(t, now)
	e.rtoCount++
	e.rtoBase = t
	e.awaitingPeer = true
	e.traceTimeout()
	if e.rtoCount > 1 {
		e.stats.Timeouts++
		e.rtoGoBack = e.rtoCount > 2 // the second expiry probes once more first (see above)
		e.cc.OnTimeout(now)
		e.applyCC()
		e.blackHole(t) // the path may have shrunk without an ICMP message (pmtud.go)
	} else {
		e.stats.Probes++
	}
	if e.sloss.Len() > 0 {
		return
	}
	first, last := e.sndLastAck(), e.sndCurrSeq()
	// Probes re-send two packets without declaring them lost: the delivery accounting keeps them
	// in flight (a probe is no evidence of loss).
	e.sloss.Insert(first, first)
	e.sloss.Insert(last, last)
	e.sent.markTimer(first, first)
	e.sent.markTimer(last, last)
	e.rtoRepair, e.rtoRepairing = first.Inc(), true
}

// peerAnswered runs on every ACK and NAK: new data may flow again. After a retransmission
// timeout it also queues every packet
// still unacknowledged once (UDT4's go-back-N, spec §4.5, here once per timeout and only when the
// peer is known to be there again): a UDT 4.9+ receiver reports each loss once (spec §2.4), so
// after a timeout the sender cannot know which retransmissions it still lacks; a receiver of ours
// would re-report them, at the cost of this one flight of duplicates.
func (e *Endpoint) peerAnswered() {
	e.awaitingPeer = false
	if !e.rtoGoBack {
		return
	}
	e.rtoGoBack = false
	if e.inFlight() == 0 {
		return
	}
	first, last := e.sndLastAck(), e.sndCurrSeq()
	e.addLoss(first, last)
	e.dlv.markBlind(first, last)
	e.sent.markTimer(first, last)
	e.stats.GoBackN++
}

// NextTimer returns when OnTimer should run next; zero means never (the connection is broken, or
// closed and Done; a closing one also wakes at its linger deadline and to re-send Shutdown). An
// idle, fully acknowledged connection arms only the keep-alive and dead-peer timers.
func (e *Endpoint) NextTimer() time.Time {
	if !e.active() {
		return e.closeTimerAt()
	}
	next := min(e.lastRecv+e.cfg.IdleTimeout, e.keepAliveAligned())
	if d, ok := e.unreachableDue(); ok {
		next = min(next, d)
	}
	if d, ok := e.ackDue(); ok {
		next = min(next, d)
	}
	if e.rloss.Len() > 0 {
		next = min(next, e.nakTick+e.nakCheckEvery())
	}
	if d, ok := e.pendingNAKDue(); ok {
		next = min(next, d)
	}
	if d, ok := e.deferredDue(); ok {
		next = min(next, d)
	}
	if e.inFlight() > 0 {
		next = min(next, e.rtoBase+e.rtoInterval())
	}
	if d, ok := e.lostRepairDue(e.lastRecv); ok {
		next = min(next, d)
	}
	if d, ok := e.windowImplyDue(); ok {
		next = min(next, d)
	}
	return e.at(e.lingerTimer(next))
}

// trim returns the buffers' spare pages to the shared pool when the connection has been idle for
// a keep-alive interval. Pages holding data are given back as their last packet is acknowledged
// or read, so an idle connection whose data has all been acknowledged and read then holds no
// payload memory; the buffers take pages again on demand (from the pool, not per packet).
func (e *Endpoint) trim() {
	e.snd.Trim()
	e.rcv.Trim()
	e.sent.trim()
	e.dlv.trim()
}
