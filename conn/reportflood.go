package conn

import (
	"log/slog"
	"time"
)

// The socket's ICMP error reports (icmp.go) cost a read each: the kernel sets a report's error as
// the socket's pending error and hands it to the next read ahead of the datagrams queued, so
// reports arriving faster than the reader reads starve every connection on the socket. Anyone
// who knows the socket's address and port can send them (the ICMP quotes need only the ports).
// Reports are hints (a faster Dial refusal, a shorter wait for a dead peer, path MTU news), so
// under a flood the socket stops taking them for a while.
const (
	// reportFloodRate is the rate of reports per second above which the socket turns its
	// reports off: a legitimate socket sees one per datagram sent to a host that refuses it,
	// which its connections' retransmission timeouts and keep-alives hold to a few per second
	// each; a hostile check measured no harm at 10 000 a second and a fifth of the goodput left
	// at 30 000.
	reportFloodRate = 10_000
	// reportsOffFor is how long reports stay off after a flood: the default IdleTimeout, the
	// horizon within which a dead peer's report would have mattered.
	reportsOffFor = 10 * time.Second
)

// reportFlood counts the reports the reader meets per second and turns the socket's reports off
// while they flood in. The reader goroutine owns it.
type reportFlood struct {
	start    time.Time // the current one-second window
	n        int       // reports in it
	offUntil time.Time // reports are off until then (zero: on)
}

// note counts n reports at now (those a drain took, or one for an error whose report found
// no room in the error queue: reports that come faster than the reader reads fold into one
// error) and turns reports off if they flood in.
func (f *reportFlood) note(m *mux, now time.Time, n int) {
	if now.Sub(f.start) >= time.Second {
		f.start, f.n = now, 0
	}
	if f.n += n; f.n <= reportFloodRate || !f.offUntil.IsZero() {
		return
	}
	m.io.DisableReports()
	f.offUntil = now.Add(reportsOffFor)
	m.obs.recordNow(slog.LevelWarn, "ICMP error reports flooding the socket: turned off for a while",
		slog.Int("per_second", f.n), slog.Duration("off_for", reportsOffFor))
	m.obs.flush() // the reader goroutine: no lock held
}

// resume turns reports back on once their time off has passed (checked as datagrams arrive).
func (f *reportFlood) resume(m *mux, now time.Time) {
	if f.offUntil.IsZero() || now.Before(f.offUntil) {
		return
	}
	m.io.EnableReports()
	f.offUntil, f.start, f.n = time.Time{}, now, 0
}
