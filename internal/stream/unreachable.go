package stream

import (
	"fmt"
	"syscall"
	"time"
)

// A "port unreachable" report (an ICMP message about a packet we sent, which conn matched to this
// connection) says the peer's process may be gone. Anyone who sees the path can forge one, so
// it never ends the connection by itself: it shortens the dead-peer timer. If nothing at all
// arrives from the peer within unreachableGrace of the first report, the connection breaks
// (with a *PeerIdleError whose Refused is true); anything that arrives clears the report.

// unreachableGrace is how long the peer may stay silent after a port-unreachable report: two
// keep-alive intervals (the longest a live peer of ours stays silent, timers.go) plus one
// retransmission timeout for its packet to arrive, never more than IdleTimeout.
func (e *Endpoint) unreachableGrace() time.Duration {
	return min(2*e.kaInterval+e.rtt.Timeout(), e.cfg.IdleTimeout)
}

// OnUnreachable takes a port-unreachable report for a packet sent to the peer at now.
func (e *Endpoint) OnUnreachable(now time.Time) {
	if !e.active() {
		return
	}
	t := e.since(now)
	if e.unreachAt < 0 || e.lastRecv > e.unreachAt {
		e.unreachAt = t // the first report since the peer was last heard from
	}
	e.stats.Unreachable++
}

// unreachableDue returns when the shortened dead-peer timer fires; ok is false when no report
// is pending (none, or the peer was heard from since).
func (e *Endpoint) unreachableDue() (time.Duration, bool) {
	if e.unreachAt < 0 || e.lastRecv > e.unreachAt {
		return 0, false
	}
	return e.unreachAt + e.unreachableGrace(), true
}

// checkUnreachable breaks the connection when the peer stayed silent for the grace after a
// port-unreachable report; it reports whether it did.
func (e *Endpoint) checkUnreachable(t time.Duration) bool {
	due, ok := e.unreachableDue()
	if !ok || t < due {
		return false
	}
	e.err = &PeerIdleError{Idle: t - e.lastRecv, Refused: true}
	return true
}

// refusedText is appended to a PeerIdleError's message when a port-unreachable report cut the
// wait short.
func (e *PeerIdleError) refusedText() string {
	if !e.Refused {
		return ""
	}
	return fmt.Sprintf(" (the peer's host reported port unreachable: %v)", syscall.ECONNREFUSED)
}

// Unwrap returns syscall.ECONNREFUSED when a port-unreachable report cut the wait short, so that
// errors.Is(err, syscall.ECONNREFUSED) tells that case apart; nil otherwise.
func (e *PeerIdleError) Unwrap() error {
	if e.Refused {
		return syscall.ECONNREFUSED
	}
	return nil
}
