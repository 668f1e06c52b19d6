package conn

import (
	"sync/atomic"
	"time"
)

// ListenerStats counts what a Listener did with the datagrams addressed to it (socket ID 0) and
// what its UDP socket dropped. Counters are totals since the Listener was created.
type ListenerStats struct {
	CookiesSent uint64 // connection requests (type 1) answered with a SYN cookie; no state is kept (spec §3.2 step 3)
	Accepted    uint64 // connections made and queued for Accept
	Repeated    uint64 // conclusion handshakes of a connection still open: answered again, nothing made (spec §3.2)
	Replayed    uint64 // conclusion handshakes of a connection already closed: dropped, nothing made
	BadCookie   uint64 // conclusion handshakes whose cookie this Listener did not issue for that address, or expired
	BadField    uint64 // conclusion handshakes with a field out of bounds (MSS, flow window, ISN, socket ID): dropped
	BadVersion  uint64 // wrong UDT version or socket type: rejected (type 1002)
	BacklogFull uint64 // the accept queue was full: rejected (type 1002)
	NotServed   uint64 // handshakes of a request type a Listener does not serve (rendezvous, 1002 ...): dropped
	Malformed   uint64 // datagrams to socket ID 0 that do not decode as a handshake

	// The socket's own drops (shared with every connection on it).
	UnknownDest uint64 // datagrams for a socket ID not on this socket (a foreign or long-gone connection)
	Short       uint64 // datagrams shorter than a UDT header
	Oversized   uint64 // datagrams longer than the MSS allows
	KernelDrops uint64 // datagrams the kernel dropped because the socket's receive buffer was full (Linux)
}

// listenerCounters are the Listener's counters (ListenerStats' first part).
type listenerCounters struct {
	cookies, accepted, repeated, replayed    atomic.Uint64
	badCookie, badField, badVersion, backlog atomic.Uint64
	notServed, malformed                     atomic.Uint64
}

// Stats returns the Listener's counters. It is safe to call at any time, also after Close.
func (l *Listener) Stats() ListenerStats {
	c := &l.stats
	m := l.mux
	return ListenerStats{
		CookiesSent: c.cookies.Load(), Accepted: c.accepted.Load(), Repeated: c.repeated.Load(),
		Replayed: c.replayed.Load(), BadCookie: c.badCookie.Load(), BadField: c.badField.Load(),
		BadVersion: c.badVersion.Load(), BacklogFull: c.backlog.Load(), NotServed: c.notServed.Load(),
		Malformed:   c.malformed.Load(),
		UnknownDest: m.drops.unknownDest.Load(), Short: m.drops.short.Load(), Oversized: m.drops.oversized.Load(),
		KernelDrops: m.kernelDrops(),
	}
}

// Replays. A conclusion handshake (type −1) that repeats one this Listener has already turned
// into a connection — same peer address, peer socket ID and ISN, the reference's duplicate key
// (spec §3.2) — never makes another: while the connection is open it is answered again (the
// peer may have lost the answer), and once it is closed it is dropped. A genuine client dials
// with a fresh random socket ID and ISN, so only a replay (or a client's late retry) repeats a
// closed connection's key. The key is remembered after the close for as long as the cookie the
// handshake carried can still be valid — until the end of the cookie bucket after the one it
// was issued in (cookie.go): past that, a replay fails the cookie check anyway. So the table
// holds at most the connections made in the last two cookie periods.

// peerEntry is a byPeer entry: an open connection, or (c == nil) a closed one remembered until
// replayUntil.
type peerEntry struct {
	c           *Conn
	replayUntil time.Time
}

// pruneReplays drops the closed connections whose cookies have expired, at most once per
// cookie period. Caller holds l.mu.
func (l *Listener) pruneReplays(now time.Time) {
	if now.Sub(l.pruned) < cookiePeriod {
		return
	}
	l.pruned = now
	for k, e := range l.byPeer {
		if e.c == nil && !now.Before(e.replayUntil) {
			delete(l.byPeer, k)
		}
	}
}
