package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/internal/stream"
)

// Config.Logger and Config.Tracer for one connection.
//
// Logging never happens with the connection's mutex held, nor on its reader, pacer or timer
// goroutine: a slog handler may do I/O, and a slow one must not stall the connection. Whatever
// is worth logging is recorded under the lock (a record is a few words, no allocation); after
// the lock is released (by whichever goroutine made the engine call, see Conn.apply), a
// short-lived goroutine is started if none runs, which logs the records in order and ends when
// there are none left; the connection's end (finish, which CloseContext waits for) waits for it
// and logs what is left. Each reason is rate-limited per connection: its first occurrence is
// logged at once, then at most one line per logEvery carrying the count since the last line.

// logEvery is the least time between two log lines of one reason on one connection (or
// listener, or socket): a flood of any rate costs at most one line per 10 s each.
const logEvery = 10 * time.Second

// reason names what a rate-limited log line reports.
type reason uint8

const (
	reasonForeignSource reason = iota // packets for our socket ID from another address
	reasonMalformed
	reasonForgedACK
	reasonForgedNAK
	reasonOutOfWindow
	reasonDuplicate
	reasonUnknownACK2
	reasonIgnoredCtrl
	reasonTimeout // retransmission timeouts
	reasonPhase   // congestion control phase changes
	reasonPathMTU

	// A Listener's and a socket's reasons.
	reasonBadHandshake // not a 64-byte handshake
	reasonBadCookie
	reasonBadField
	reasonIncompatible // UDT version or socket type
	reasonBacklogFull
	reasonShort       // datagram shorter than a UDT header
	reasonOversized   // longer than the socket's packet size
	reasonUnknownDest // for a socket ID not on this socket
	reasonNoListener  // a connection request to a socket with no Listener
	reasonKernelDrops // datagrams the kernel dropped at a full socket receive buffer (ovfl.go)
	numReasons
)

// dropReasons describe each drop counter for the log: name, level.
var dropReasons = [...]struct {
	name  string
	level slog.Level
}{
	reasonForeignSource: {"from another address than the peer's", slog.LevelWarn},
	reasonMalformed:     {"malformed", slog.LevelWarn},
	reasonForgedACK:     {"ACK of data never sent", slog.LevelWarn},
	reasonForgedNAK:     {"NAK of data never sent", slog.LevelWarn},
	reasonOutOfWindow:   {"data beyond the receive window", slog.LevelDebug},
	reasonDuplicate:     {"duplicate data", slog.LevelDebug},
	reasonUnknownACK2:   {"ACK2 of no recorded ACK", slog.LevelDebug},
	reasonIgnoredCtrl:   {"control packet not used by a stream connection", slog.LevelDebug},
}

// reasonText says what a listener's or a socket's reason means in a log line.
var reasonText = [numReasons]string{
	reasonBadHandshake: "not a handshake", reasonBadCookie: "bad or expired cookie",
	reasonBadField: "field out of bounds", reasonIncompatible: "UDT version or socket type",
	reasonBacklogFull: "accept backlog full",
	reasonShort:       "shorter than a UDT header", reasonOversized: "longer than the socket's packet size",
	reasonUnknownDest: "unknown destination socket ID", reasonNoListener: "connection request, no Listener",
	reasonKernelDrops: "socket receive buffer full",
}

// limiter rate-limits log lines per reason (logEvery).
type limiter struct {
	last    [numReasons]time.Time
	pending [numReasons]uint64 // occurrences not yet logged
}

// note counts n occurrences of r at now and reports whether to log now, with the count to
// report (those since the last line).
func (l *limiter) note(r reason, n uint64, now time.Time) (uint64, bool) {
	l.pending[r] += n
	if l.pending[r] == 0 || (!l.last[r].IsZero() && now.Sub(l.last[r]) < logEvery) {
		return 0, false
	}
	c := l.pending[r]
	l.last[r], l.pending[r] = now, 0
	return c, true
}

// logRecord is one line to log later; attrs are inline (no allocation to record one).
type logRecord struct {
	level slog.Level
	msg   string
	attrs [6]slog.Attr
	n     int
}

func (r *logRecord) add(as ...slog.Attr) {
	for _, a := range as {
		if r.n < len(r.attrs) {
			r.attrs[r.n] = a
			r.n++
		}
	}
}

// observer is a connection's logging and tracing.
type observer struct {
	log   *slog.Logger   // nil: nothing is logged
	debug bool           // log is enabled at slog.LevelDebug
	tq    *traceQueue    // nil: not traced
	info  trace.ConnInfo // for the Tracer factory

	pending  atomic.Bool // recs is not empty
	mu       sync.Mutex  // guards the fields below; held only to append or swap
	recs     []logRecord
	flushing bool               // a drain goroutine runs
	idle     chan struct{}      // closed when it ends
	lim      *limiter           // allocated with log
	drops    [numReasons]uint64 // drop counters last seen (checkDrops)
	phase    string             // congestion control phase last seen
}

// init sets up o for a connection about to be created (before its engine: the engine's tracer
// is o.engineTracer()).
func (o *observer) init(cfg *Config, info trace.ConnInfo) {
	o.initLog(cfg.Logger, "local", info.Local, "remote", info.Remote, "socket", info.LocalID)
	if cfg.Tracer != nil {
		o.tq, o.info = newTraceQueue(), info
	}
}

// initLog enables logging to l, if it logs anything, with attrs on every line.
func (o *observer) initLog(l *slog.Logger, attrs ...any) {
	ctx := context.Background()
	if l == nil || !l.Handler().Enabled(ctx, slog.LevelError) {
		return
	}
	o.debug = l.Handler().Enabled(ctx, slog.LevelDebug)
	o.log = l.With(attrs...)
	o.lim = new(limiter)
}

// engineTracer is the hook the engine reports to: the trace queue, and the events worth a
// debug line. nil when neither wants anything (the engine then builds no event).
func (o *observer) engineTracer() (t trace.Tracer, packets bool) {
	if o.tq == nil && !o.debug {
		return nil, false
	}
	return o, o.tq != nil
}

// Event takes an engine event; it runs with the connection's mutex held.
func (o *observer) Event(ev trace.Event) {
	if o.tq != nil {
		o.tq.add(ev)
	}
	if !o.debug {
		return
	}
	switch ev.Kind {
	case trace.CongestionState:
		if ev.Detail == "" {
			return
		}
		o.mu.Lock()
		prev := o.phase
		o.phase = ev.Detail
		o.mu.Unlock()
		if prev != "" && prev != ev.Detail {
			o.record(ev.Time, reasonPhase, slog.LevelDebug, "congestion control phase changed",
				slog.String("from", prev), slog.String("to", ev.Detail),
				slog.Duration("period", ev.Period), slog.Int("cwnd", ev.CWnd))
		}
	case trace.Timeout:
		if ev.Detail == "timeout" {
			o.record(ev.Time, reasonTimeout, slog.LevelDebug, "retransmission timeout", slog.Int("expiries", ev.Packets))
		}
	}
}

// record queues a line of reason r (rate-limited); counted lines carry "count".
func (o *observer) record(now time.Time, r reason, level slog.Level, msg string, attrs ...slog.Attr) {
	if o.log == nil || (level < slog.LevelInfo && !o.debug) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n, ok := o.lim.note(r, 1, now)
	if !ok {
		return
	}
	rec := logRecord{level: level, msg: msg}
	rec.add(attrs...)
	if n > 1 {
		rec.add(slog.Uint64("count", n))
	}
	o.appendLocked(rec)
}

func (o *observer) appendLocked(rec logRecord) {
	o.recs = append(o.recs, rec)
	o.pending.Store(true)
}

// recordNow queues a line that is not rate-limited (once per connection: established, broken).
func (o *observer) recordNow(level slog.Level, msg string, attrs ...slog.Attr) {
	if o.log == nil || (level < slog.LevelInfo && !o.debug) {
		return
	}
	rec := logRecord{level: level, msg: msg}
	rec.add(attrs...)
	o.mu.Lock()
	o.appendLocked(rec)
	o.mu.Unlock()
}

// checkDrops compares the drop counters with those last seen and records what grew
// (rate-limited per reason). Called with the connection's mutex held, from its timer.
func (o *observer) checkDrops(d stream.Drops, foreign uint64, now time.Time, final bool) {
	if o.log == nil {
		return
	}
	cur := [numReasons]uint64{
		reasonForeignSource: foreign, reasonMalformed: d.Malformed, reasonForgedACK: d.ForgedACK,
		reasonForgedNAK: d.ForgedNAK, reasonOutOfWindow: d.OutOfWindow, reasonDuplicate: d.Duplicate,
		reasonUnknownACK2: d.UnknownACK2, reasonIgnoredCtrl: d.IgnoredCtrl + d.WrongDest,
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for r := range dropReasons {
		dr := dropReasons[r]
		if dr.name == "" {
			continue
		}
		delta := cur[r] - o.drops[r]
		o.drops[r] = cur[r]
		if dr.level < slog.LevelInfo && !o.debug {
			continue
		}
		n, ok := o.lim.note(reason(r), delta, now)
		if final && !ok && o.lim.pending[r] > 0 {
			n, ok = o.lim.pending[r], true
			o.lim.pending[r] = 0
		}
		if !ok {
			continue
		}
		rec := logRecord{level: dr.level, msg: "dropped packets"}
		rec.add(slog.String("reason", dr.name), slog.Uint64("count", n))
		o.appendLocked(rec)
	}
}

// flush has the recorded lines logged by a drain goroutine (started unless one runs); never
// call it with the connection's mutex held.
func (o *observer) flush() {
	if !o.pending.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.flushing || len(o.recs) == 0 {
		return
	}
	o.flushing, o.idle = true, make(chan struct{})
	go o.drain()
}

// drain logs the recorded lines in order until there are none.
func (o *observer) drain() {
	for {
		o.mu.Lock()
		recs := o.recs
		o.recs = nil
		if len(recs) == 0 {
			o.flushing = false
			o.pending.Store(false)
			close(o.idle)
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		for i := range recs {
			r := &recs[i]
			o.log.LogAttrs(context.Background(), r.level, r.msg, r.attrs[:r.n]...)
		}
	}
}

// wait returns once no drain goroutine runs and nothing is left to log (it logs the rest
// itself).
func (o *observer) wait() {
	o.mu.Lock()
	idle, flushing := o.idle, o.flushing
	o.mu.Unlock()
	if flushing {
		<-idle
	}
	o.mu.Lock()
	if o.flushing { // a flush started meanwhile: let it finish
		idle = o.idle
		o.mu.Unlock()
		<-idle
		return
	}
	o.flushing, o.idle = true, make(chan struct{})
	o.mu.Unlock()
	o.drain()
}

// broken records why the connection ended (called once, with the connection's mutex held);
// st are its counters then.
func (o *observer) broken(err error, st *stream.Stats, now time.Time) {
	detail := "closed"
	summary := []slog.Attr{
		slog.Uint64("sent", st.PktSent), slog.Uint64("retransmitted", st.PktRetrans),
		slog.Uint64("received", st.PktRecv), slog.Duration("rtt", st.RTT),
	}
	var idle *peerIdleError
	var pe *stream.PeerError
	switch {
	case errors.Is(err, net.ErrClosed):
		o.recordNow(slog.LevelDebug, "connection closed", summary...)
	case errors.As(err, &idle):
		detail = err.Error()
		o.recordNow(slog.LevelWarn, "peer unresponsive, connection broken",
			append([]slog.Attr{slog.Duration("silent", idle.idle)}, summary...)...)
	case errors.As(err, &pe):
		detail = err.Error()
		o.recordNow(slog.LevelWarn, "peer signalled an error, connection broken",
			append([]slog.Attr{slog.Uint64("code", uint64(pe.Code))}, summary...)...)
	default:
		detail = err.Error()
		o.recordNow(slog.LevelWarn, "connection broken", append([]slog.Attr{slog.String("error", detail)}, summary...)...)
	}
	if o.tq != nil {
		o.tq.add(trace.Event{Time: now, Kind: trace.Closed, Detail: detail})
	}
}

// pathMTU records a change of the packet size in use (Info; traced as trace.PathMTU). Every
// change is logged, not rate-limited: the search makes a handful per connection, each at least a
// round trip apart, and a line held back would hide the size in use.
func (o *observer) pathMTU(old, mss int, why string, now time.Time) {
	o.recordNow(slog.LevelInfo, "path MTU changed",
		slog.Int("from", old), slog.Int("to", mss), slog.String("reason", why))
	if o.tq != nil {
		o.tq.add(trace.Event{Time: now, Kind: trace.PathMTU, Bytes: mss, Detail: why})
	}
}

// close logs what is left, ends the trace (delivering every queued event) and releases o.
// Called by finish after the connection has stopped, without its mutex.
func (o *observer) close() {
	if o.log != nil {
		o.wait()
	}
	if o.tq != nil {
		o.tq.close()
	}
}

// traceInfo describes the connection for its Tracer.
func (c *Conn) traceInfo(ctl congestion.Controller, p connParams, now time.Time) trace.ConnInfo {
	info := trace.ConnInfo{Start: now, Local: c.mux.local, Remote: c.raddr, LocalID: p.id, PeerID: p.peerID,
		MSS: p.mss, Server: p.server}
	if c.cfg.Tracer != nil {
		info.Congestion = ccName(ctl)
	}
	return info
}

// observeBroken records why the connection ended; the caller holds c.mu.
func (c *Conn) observeBroken(err error) {
	if c.obs.log == nil && c.obs.tq == nil {
		return
	}
	st := c.ep.Stats()
	c.obs.broken(err, &st, time.Now())
}

// observeDrops records the drops since the last check; the caller holds c.mu.
func (c *Conn) observeDrops(now time.Time, final bool) {
	if c.obs.log != nil {
		c.obs.checkDrops(c.ep.DropCounts(), c.foreignDrops.Load(), now, final)
	}
}

// notePathMTU records that the packet size in use changed from old to mss bytes (MSS, IP and
// UDP headers included) and why: an Info line and a trace.PathMTU event. It may be called with
// or without c.mu held (path MTU discovery calls it where it decides).
func (c *Conn) notePathMTU(old, mss int, why string, now time.Time) {
	c.obs.pathMTU(old, mss, why, now)
}

// logRejected records a connection request the listener dropped or refused, and why.
func (l *Listener) logRejected(r reason, from netip.AddrPort, now time.Time) {
	if l.obs.log == nil {
		return
	}
	level, msg := slog.LevelDebug, "connection request dropped"
	switch r {
	case reasonIncompatible:
		level, msg = slog.LevelInfo, "connection request rejected"
	case reasonBacklogFull:
		level, msg = slog.LevelWarn, "connection request rejected"
	}
	l.obs.record(now, r, level, msg, slog.String("reason", reasonText[r]), slog.String("from", from.String()))
}

// logDrop records a datagram the socket dropped before any connection saw it (the reader
// goroutine, no lock held: it logs at once).
func (m *mux) logDrop(r reason) {
	if m.obs.log == nil || !m.obs.debug {
		return
	}
	m.obs.record(time.Now(), r, slog.LevelDebug, "datagram dropped", slog.String("reason", reasonText[r]))
	m.obs.flush() // the reader goroutine: no lock held
}

// logDial logs at debug why a Dial's handshake failed (Dial returns the error too).
func logDial(cfg *Config, raddr net.Addr, err error) {
	if l := cfg.Logger; l != nil {
		l.LogAttrs(context.Background(), slog.LevelDebug, "dial rejected", slog.String("remote", raddr.String()), slog.String("error", err.Error()))
	}
}

// observeEstablished records the new connection (debug) and starts its trace, once its engine
// exists.
func (c *Conn) observeEstablished(ctl congestion.Controller, m *mux) {
	if c.obs.tq != nil {
		c.obs.tq.start(c.cfg.Tracer, c.obs.info, func() {
			// Not traced: the engine stops building events (but keeps reporting what a debug
			// log wants).
			c.mu.Lock()
			var t trace.Tracer
			if c.obs.debug {
				t = &c.obs
			}
			c.ep.SetTracer(t, false)
			c.mu.Unlock()
		})
	}
	if c.obs.debug {
		c.obs.recordNow(slog.LevelDebug, "connection established", slog.Uint64("peer_socket", uint64(c.peerID)),
			slog.Int("mss", c.mss), slog.String("congestion", ccName(ctl)), slog.String("pacer", m.pacerName))
	}
}

// ccName names a controller as congestion.ParseSpec spells it (its String method), or by its Go
// type when it has none (a caller's own controller).
func ccName(ctl congestion.Controller) string {
	if s, ok := ctl.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", ctl)
}
