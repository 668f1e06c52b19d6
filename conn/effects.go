package conn

import (
	"time"

	"github.com/udtgo/udt/internal/stream"
)

// After every engine call (or batch of them) the caller, still holding c.mu, pulls what the
// engine asks for (pullLocked), releases the lock, and does it (apply): sends the control
// packets, sends the data packets that were due (released under the lock: their headers built
// in the caller's scratch, their payloads pinned in the send buffer until the send is done),
// schedules the next departure on the data pacer, arms the connection's timer, wakes readers and
// writers. Nothing in pullLocked blocks or makes a system call.
//
// Data leave from whichever goroutine finds them due: the data pacer for paced departures, and
// the goroutine whose call made them due at once (a Write on an idle connection, the reader after
// an ACK or a NAK, a timer's retransmission), which saves waking the pacer's thread (tens of µs
// of CPU on this VM) and its latency. One goroutine at a time sends a connection's data
// (Conn.sending), so packets leave in the order they were released; the others schedule the
// pacer instead, and the sender re-reads the departure when it is done.

// effects is what pullLocked collected for apply.
type effects struct {
	stream.Effects
	ob      *outbox      // control packets to send: the caller's (it flushes), or pooled (apply does)
	pooled  bool         // ob came from the pool
	sb      *sendScratch // data packets released for a direct send (nil: none), from the mux's pool
	n       int          // how many: sb.hdrs[:n] and sb.pays[:n], pinned in the send buffer
	size    int          // the connection's packet size when they were released
	probe   uint32       // the path MTU probe's sequence number, if probing
	probing bool
	gen     uint64    // the pull's rank: the timer armed by the latest pull wins (0: do not arm)
	timerAt time.Time // when the connection's timer should fire (zero: never)
	finish  bool      // the engine is Done: finish the connection
}

// via says what a caller of pullLocked brings.
type via struct {
	ob     *outbox // where to put control packets; nil: an outbox from the pool if there are any
	noSend bool    // the caller is the data pacer, which sends through its own Release
}

// pullLocked takes what the engine's calls produced. Caller holds c.mu.
func (c *Conn) pullLocked(v via) effects {
	fx := effects{Effects: c.ep.Effects(), ob: v.ob}
	if fx.Control > 0 {
		if fx.ob == nil {
			fx.ob, fx.pooled = outboxes.Get().(*outbox), true
		}
		fx.ob.takeControl(c.ep, c.peer)
	}
	if !v.noSend && !fx.Departure.IsZero() {
		if now := time.Now(); !fx.Departure.After(now) && c.sending.CompareAndSwap(false, true) {
			fx.sb = c.mux.scratches.Get().(*sendScratch)
			fx.size = c.ep.PacketSize()
			fx.n, _ = c.ep.ReleaseViews(now, fx.sb.hdrs, fx.sb.pays)
			// A release may end a re-cut after a packet size change (stream's pmtud.go), which
			// gives Write room again: the Effects above were read before it.
			fx.Writable = fx.Writable || c.ep.CanWrite()
			fx.probe, fx.probing = c.ep.ProbeSeq()
			fx.Departure = time.Time{}  // apply re-reads it once the packets are out
			fx.Timer = c.ep.NextTimer() // sending armed the retransmission timer
		}
	}
	c.timerGen++
	fx.gen = c.timerGen
	switch {
	case c.finishing:
		fx.gen = 0
	case fx.Done:
		c.finishing = true
		fx.finish, fx.gen = true, 0
	default:
		fx.timerAt = fx.Timer
	}
	if fx.Err != nil {
		c.breakLocked(connError(fx.Err))
	}
	c.noteSizeLocked() // pmtu.go: a change of the packet size, for the Logger and the Tracer
	if c.closed && !c.settled {
		if ok, unacked, why := c.ep.CloseResult(); ok {
			c.settled = true
			c.closeErr = closeOutcome(unacked, why, c.ep.Err(), c.cfg.Linger)
		}
	}
	return fx
}

// apply does what pullLocked collected, after c.mu is released.
func (c *Conn) apply(fx *effects) {
	if fx.pooled {
		flushPooled(fx.ob, c.mux.io)
	}
	if fx.sb != nil {
		if fx.n > 0 {
			c.sendPackets(fx.sb, fx.n, fx.size, fx.probe, fx.probing) // pmtu.go
		}
		c.sending.Store(false)
		// What became due meanwhile, or was left for us by a pacer that found us sending.
		c.mu.Lock()
		if fx.n > 0 {
			fx.Writable = c.unpinLocked() || fx.Writable
		}
		fx.Departure = c.ep.Departure()
		c.mu.Unlock()
		fx.sb.reset(fx.n)
		c.mux.scratches.Put(fx.sb)
	}
	if !fx.Departure.IsZero() {
		c.dataH.Schedule(fx.Departure)
	}
	c.arm(fx.gen, fx.timerAt)
	if fx.Readable {
		signal(c.readable)
	}
	if fx.Writable {
		signal(c.writable)
	}
	c.obs.flush() // what the calls recorded for Config.Logger, logged off the lock
	if fx.finish {
		// On a goroutine of its own: finish may tear the socket down, which waits for the
		// reader, and the reader may be the caller.
		go c.finish()
	}
}

// arm sets the connection's timer to at (zero: stops it) unless a later pull already armed it:
// pulls are ranked under c.mu, arming happens after it (time.Timer.Reset may wake the runtime's
// netpoller, a system call), so the newest engine state wins even when goroutines arm out of
// order. The engine's NextTimer is the one source of the time; armedAt only saves a Reset when it
// did not move.
func (c *Conn) arm(gen uint64, at time.Time) {
	if gen == 0 {
		return
	}
	c.armMu.Lock()
	if gen > c.armedGen {
		c.armedGen = gen
		if !at.Equal(c.armedAt) {
			c.armedAt = at
			if at.IsZero() {
				c.timer.Stop()
			} else {
				c.timer.Reset(time.Until(at))
			}
		}
	}
	c.armMu.Unlock()
}

// disarm stops the timer for good (finish).
func (c *Conn) disarm() {
	c.armMu.Lock()
	c.armedGen = ^uint64(0)
	c.timer.Stop()
	c.armMu.Unlock()
}

// stallDelay defers a timer that is still due right after OnTimer ran it (an engine fault) so
// that it cannot spin, as pacer.StallDelay does for a stalled flow.
const stallDelay = time.Millisecond

// onTimer is the connection's time.AfterFunc callback: it hands the connection to the socket's
// timer goroutine (timers.go).
func (c *Conn) onTimer() {
	c.armMu.Lock()
	c.armedAt = time.Time{} // fired: arming the same time again needs a Reset
	c.armMu.Unlock()
	c.mux.timers.push(c)
}

// runTimers runs the engine's due timers (ACK, NAK, retransmission, keep-alive, dead peer,
// linger, Shutdown re-sends) on the socket's timer goroutine, with its outbox (sent after its
// batch).
func (c *Conn) runTimers(ob *outbox) {
	c.mu.Lock()
	if c.finishing {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	c.ep.OnTimer(now)
	c.observeDrops(now, false)
	fx := c.pullLocked(via{ob: ob})
	if !c.finishing && !fx.timerAt.IsZero() && !fx.timerAt.After(now) {
		fx.timerAt = now.Add(stallDelay)
	}
	c.mu.Unlock()
	c.apply(&fx)
	if c.mux.reportsPending.Load() { // a write under no lock may drain the ICMP reports (icmp.go)
		c.mux.drainReports()
	}
}

// sendScratch holds one release of data packets (stream's ReleaseViews): packet i is hdrs[i], its
// header, built here, followed by pays[i], its payload, which stays in the connection's send
// buffer, pinned there until the send is done. udpio.WriteBatchParts gathers the two, so a
// packet's bytes are copied once on the way out, by the kernel, instead of first into a 94 KB
// send arena per socket (BenchmarkBulkCPU/hybrid, 7 A B pairs: sender 1223 → 1133 and receiver
// 1160 → 1048 ns per packet, medians; the kernel's copy from cold send-buffer pages remains).
type sendScratch struct {
	hdrs [][]byte // sendBatch headers of 16 bytes, carved from one array
	pays [][]byte
	one  []byte // a packet gathered whole, for a send that takes one buffer (WriteFragmented)
}

func newSendScratch() *sendScratch {
	s := &sendScratch{hdrs: make([][]byte, sendBatch), pays: make([][]byte, sendBatch)}
	arena := make([]byte, sendBatch*headerSize)
	for i := range s.hdrs {
		s.hdrs[i] = arena[i*headerSize : (i+1)*headerSize : (i+1)*headerSize]
	}
	return s
}

// unpinLocked ends the pin of a batch that has been sent (its payloads may be freed now) and
// reports whether a blocked writer should be woken for the space ACKs freed during the send,
// which no Effects reported while the batch was pinned. Caller holds c.mu.
func (c *Conn) unpinLocked() bool { return c.ep.Unpin() && c.ep.CanWrite() }

// reset drops the references to the first n payloads (the pages they lie on go back to the
// shared pool once their packets are acknowledged; a pooled scratch must not keep them alive).
func (s *sendScratch) reset(n int) { clear(s.pays[:n]) }
