package stream

import (
	"math"
	"time"
)

// Closing (spec §3.4). Close starts it and returns: Write takes nothing more, and what was
// written is still sent and retransmitted while the peer acknowledges it, driven by the same
// calls as before (Release, HandlePacket, OnTimer). The close settles when everything written
// has been acknowledged, the linger time passes, the peer shuts down or the connection breaks;
// then, if the connection still works, the Shutdown packet is sent and nothing else.
//
// UDT4 sends one Shutdown and never repeats it (spec §3.4), so a lost one leaves its peer waiting
// for the idle timeout instead of reading EOF. A peer of ours answers every Shutdown with its own
// (onControl); until that answer arrives the Shutdown is re-sent up to shutdownResends times,
// max(2·RTT, shutdownGap) apart, and the engine is Done at the answer or one gap after the last
// re-send. A UDT4 peer never answers, so closing against one costs the whole bound, 9 gaps
// (≈ 0.2 s on a LAN; 1.8 s when no round trip was measured yet, from UDT's initial 100 ms RTT).
const (
	shutdownResends = 8
	// shutdownGap is the least wait between Shutdowns: above a LAN's RTT, so that the answer to
	// the previous one normally arrives first, and short enough that the bound stays near 0.2 s.
	shutdownGap = 20 * time.Millisecond
)

// CloseReason says why a close settled with data unacknowledged (see CloseResult).
type CloseReason int

const (
	// CloseFlushed: everything written was acknowledged.
	CloseFlushed CloseReason = iota
	// CloseLinger: the linger time passed first (at once for a negative linger).
	CloseLinger
	// ClosePeer: the peer shut the connection down first; it will acknowledge nothing more.
	ClosePeer
	// CloseBroken: the connection broke first (see Err).
	CloseBroken
)

// closeState is the engine's part of a close.
type closeState struct {
	closing   bool          // Close was called
	lingerEnd time.Duration // when the close stops waiting for acknowledgements
	settled   bool          // the outcome is known (and Shutdown sent if it could be)
	unacked   int           // bytes unacknowledged when the close settled
	reason    CloseReason
	sends     int           // Shutdown packets sent by the close (0: none could be sent)
	resendAt  time.Duration // when the Shutdown is re-sent (or, after the last, Done)
	gaveUp    bool          // the last re-send went unanswered for a gap
}

// Close starts closing the connection at now: Write accepts nothing more; the data already
// written is still delivered until the peer has acknowledged all of it or linger has passed
// (a negative linger: not at all), and then Shutdown is sent. Keep driving the engine (Release,
// HandlePacket, OnTimer) until Done. Calling Close again does nothing.
func (e *Endpoint) Close(now time.Time, linger time.Duration) {
	if e.cl.closing {
		return
	}
	t := e.since(now)
	e.cl.closing = true
	e.cl.lingerEnd = t + min(max(linger, 0), math.MaxInt64-t) // a huge linger: never, not overflow
	e.settle(t)
}

// settle ends a close once its outcome is known, sending Shutdown if the connection still works.
// Every call that can change the outcome (an ACK, a Shutdown, a break, the linger passing) runs it.
func (e *Endpoint) settle(t time.Duration) {
	c := &e.cl
	if !c.closing || c.settled {
		return
	}
	switch {
	case e.snd.Buffered() == 0:
		c.reason = CloseFlushed
	case e.err != nil:
		c.reason = CloseBroken
	case e.peerClosed:
		c.reason = ClosePeer
	case t >= c.lingerEnd:
		c.reason = CloseLinger
	default:
		return // still delivering
	}
	c.settled = true
	c.unacked = e.snd.Buffered()
	if e.active() {
		e.sendShutdown(t)
		c.sends = 1
		c.resendAt = t + e.shutdownGap()
	}
	e.closed = true
}

func (e *Endpoint) shutdownGap() time.Duration { return max(2*e.rtt.RTT(), shutdownGap) }

// closeTimer re-sends an unanswered Shutdown (called by OnTimer once the engine stopped).
func (e *Endpoint) closeTimer(t time.Duration) {
	c := &e.cl
	if e.Done() || c.sends == 0 || t < c.resendAt {
		return
	}
	if c.sends > shutdownResends {
		c.gaveUp = true
		return
	}
	e.sendShutdown(t)
	c.sends++
	c.resendAt = t + e.shutdownGap()
}

// closeTimerAt is NextTimer once the engine stopped: the next Shutdown re-send, or zero.
func (e *Endpoint) closeTimerAt() time.Time {
	if e.Done() || e.cl.sends == 0 {
		return time.Time{}
	}
	return e.at(e.cl.resendAt)
}

// lingerTimer bounds next by the linger deadline of a close that waits for acknowledgements.
func (e *Endpoint) lingerTimer(next time.Duration) time.Duration {
	if e.cl.closing && !e.cl.settled {
		return min(next, e.cl.lingerEnd)
	}
	return next
}

// CloseResult reports whether the close has settled and, if so, how many written bytes were
// never acknowledged and why (CloseFlushed when none). Acknowledged means the peer's engine
// has the bytes in its receive buffer, not that its application has read them.
func (e *Endpoint) CloseResult() (settled bool, unacked int, why CloseReason) {
	return e.cl.settled, e.cl.unacked, e.cl.reason
}

// Done reports whether a closed engine has nothing more to do: the close settled and the peer
// answered the Shutdown, or it went unanswered after every re-send, or none could be sent (the
// connection broke or the peer had shut down first). conn then forgets the connection.
func (e *Endpoint) Done() bool {
	c := &e.cl
	return c.settled && (c.sends == 0 || c.gaveUp || e.peerClosed || e.err != nil)
}

// Unacknowledged returns the number of bytes written and not yet acknowledged by the peer.
func (e *Endpoint) Unacknowledged() int { return e.snd.Buffered() }

// Fail breaks the connection with err (conn's socket failed under it): nothing more is sent,
// and Err returns err.
func (e *Endpoint) Fail(err error) {
	if e.err == nil && err != nil {
		e.err = err
	}
	e.settle(e.lastRecv) // no clock here; the time matters only for a linger, which a break ends
}
