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
	// reportFloodMin is the least rate of reports per second that counts as a flood when they
	// outnumber the batches of datagrams read: reports that come faster than the reader reads
	// fold into one error each read, so a reader held back by them sees fewer than they are,
	// but then more of them than of batches; a thousand a second is beyond any legitimate rate
	// of refusals (above).
	reportFloodMin = 1_000
	// reportsOffFor is how long reports stay off after a flood: the default IdleTimeout, the
	// horizon within which a dead peer's report would have mattered.
	reportsOffFor = 10 * time.Second
	// reportFloodStreak is how many reads in a row may return a report's error and no datagram
	// before the reports count as a flood whatever their rate: that many reads held from the
	// socket's datagrams (a full drain's worth, maxReports) is starvation, not a hint.
	reportFloodStreak = maxReports
)

// reportFlood counts the reports the reader meets per second and turns the socket's reports off
// while they flood in. The reader goroutine owns it.
type reportFlood struct {
	start    time.Time // the current one-second window
	n        int       // reports in it
	reads    int       // batches of datagrams read in it
	streak   int       // reads in a row that returned a report's error
	offUntil time.Time // reports are off until then (zero: on)
}

// on reports whether reports are on at now, ending a time off that has passed.
func (f *reportFlood) on(now time.Time) bool {
	if !f.offUntil.IsZero() && !now.Before(f.offUntil) {
		f.offUntil, f.start, f.n, f.reads, f.streak = time.Time{}, now, 0, 0, 0 // reportsBack turned them on
	}
	return f.offUntil.IsZero()
}

// note counts n reports at now (those a drain took, or one for an error whose report found
// no room in the error queue: reports that come faster than the reader reads fold into one
// error) and turns reports off if they flood in.
func (f *reportFlood) note(m *mux, now time.Time, n int) {
	if now.Sub(f.start) >= time.Second {
		f.start, f.n, f.reads = now, 0, 0
	}
	f.n += n
	f.streak++
	if !f.offUntil.IsZero() || f.n <= reportFloodRate && (f.n <= reportFloodMin || f.n <= f.reads) &&
		f.streak <= reportFloodStreak {
		return
	}
	m.io.DisableReports()
	f.offUntil = now.Add(reportsOffFor)
	m.mu.Lock()
	if !m.closed { // back on by a timer: a socket that receives nothing would never read again
		m.reportsBack = time.AfterFunc(reportsOffFor, func() { m.io.EnableReports() })
	}
	m.mu.Unlock()
	m.obs.recordNow(slog.LevelWarn, "ICMP error reports flooding the socket: turned off for a while",
		slog.Int("per_second", f.n), slog.Duration("off_for", reportsOffFor))
	m.obs.flush() // the reader goroutine: no lock held
}

// read counts a batch of datagrams read at now.
func (f *reportFlood) read(now time.Time) {
	f.on(now)
	f.reads++
	f.streak = 0
}
