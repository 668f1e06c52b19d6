package pacer

import (
	"sync"
	"time"
)

// Flow is one sender served by a Pacer, typically one connection.
type Flow interface {
	// Release is called on the pacer goroutine when the flow's departure time has come. It
	// sends what is due at now (at most max packets; a Scheduler.Force'd packet-pair partner
	// may exceed it by one) and returns how many it sent and its next departure time, usually
	// Scheduler.Next. A zero next means idle until Handle.Schedule is called again: return it
	// whenever nothing can be sent (empty queue, full flow window). A next at or before now
	// asks to be called again at once (more was due than max allowed).
	//
	// Release may call Schedule and Remove on its own or any other Handle, and Close. It must
	// not block for long: every flow of the pacer waits for it. A Release that sends nothing
	// yet returns a next at or before now would make the pacer spin; the pacer instead defers
	// it by StallDelay and counts it in Stats.Stalls.
	Release(now time.Time, max int) (sent int, next time.Time)
}

// StallDelay is how long the pacer defers a flow whose Release sent nothing but asked to be
// called again at once (a broken Flow; see Flow.Release).
const StallDelay = time.Millisecond

// Config configures a Pacer. The zero value is valid.
type Config struct {
	// Burst is the max passed to Flow.Release: at most this many packets per flow per call.
	// Zero or negative means DefaultBurst.
	Burst int

	// Now is the pacer's clock; nil means time.Now. Tests pass pacertest's manual clock. Times
	// given to Handle.Schedule and returned by Flow.Release are on this clock.
	Now func() time.Time
}

// Pacer is the pacer goroutine: it keeps flows in a min-heap by next departure time, waits on
// a Waiter until the earliest one is due, and calls its Flow.Release. Conn runs one per UDP
// socket (the design's "packet's walk"; UDT4 does the same with its sender heap, spec §4.3).
//
// When no flow is scheduled it blocks with Wait(time.Time{}): no wakeups and no CPU until
// Schedule or Close. It never holds its mutex while waiting or while calling Release.
// All methods are safe for concurrent use.
type Pacer struct {
	w     Waiter
	now   func() time.Time
	burst int
	done  chan struct{}

	mu           sync.Mutex
	cond         sync.Cond // signalled when running becomes nil; uses mu
	heap         flowHeap
	closed       bool
	waiting      bool      // the goroutine is in (or about to enter) Wait
	waitDeadline time.Time // the deadline of that Wait; zero = idle
	running      *Handle   // the flow whose Release is in progress
	goid         uint64    // the pacer goroutine's id (to detect calls from inside Release)
	stats        stats
}

// Handle is a Flow's registration with a Pacer.
type Handle struct {
	p       *Pacer
	f       Flow
	idx     int       // index in p.heap, -1 when not queued; guarded by p.mu
	at      time.Time // scheduled departure while queued; guarded by p.mu
	removed bool      // guarded by p.mu
}

// New starts a pacer goroutine that waits with w. Close ends it. The pacer owns w for its
// lifetime (it alone calls w.Wait) but does not close it.
func New(w Waiter, cfg Config) *Pacer {
	p := &Pacer{w: w, now: cfg.Now, burst: cfg.Burst, done: make(chan struct{})}
	if p.now == nil {
		p.now = time.Now
	}
	if p.burst <= 0 {
		p.burst = DefaultBurst
	}
	p.cond.L = &p.mu
	started := make(chan struct{})
	go p.run(started)
	<-started // p.goid is set before any Remove can compare against it
	return p
}

// Add registers f. The flow starts idle: Release is not called until Schedule.
func (p *Pacer) Add(f Flow) *Handle {
	return &Handle{p: p, f: f, idx: -1}
}

// Schedule tells the pacer the flow has work from at (on the pacer's clock; a zero at means at
// once and is not counted in lateness). If the flow is idle or scheduled later it is moved to
// at, and the waiter is woken if the flow becomes the earliest. A later at than the current
// one is ignored: the flow's own Release result decides later times. Safe from any goroutine,
// including from inside Release; a no-op after Remove or Close.
//
// To change a flow's rate from another goroutine, set its Scheduler's rate under the flow's own
// lock and then call Schedule(Next()): a faster rate takes effect at once; a slower one when
// the pacer wakes at the old time and the Scheduler holds the packet back.
func (h *Handle) Schedule(at time.Time) {
	p := h.p
	p.mu.Lock()
	if h.removed || p.closed {
		p.mu.Unlock()
		return
	}
	if h.idx >= 0 {
		if !at.Before(h.at) {
			p.mu.Unlock()
			return
		}
		h.at = at
		p.heap.fix(h.idx)
	} else {
		h.at = at
		p.heap.push(h)
	}
	wake := h.idx == 0 && p.waiting && (p.waitDeadline.IsZero() || at.Before(p.waitDeadline))
	if wake {
		p.waitDeadline = at // later Schedules compare against the new target: one Wake suffices
	}
	p.mu.Unlock()
	if wake {
		p.w.Wake()
	}
}

// Remove unregisters the flow. It is idempotent and safe from any goroutine. When it returns,
// Release is not running and will not be called again, except when Remove is called from inside
// that flow's own Release on the pacer goroutine: then it returns at once and Release is not
// called again after the current call. If the pacer was waiting for this flow, it is woken to
// wait for the next one instead (or without deadline when none is left).
func (h *Handle) Remove() {
	p := h.p
	p.mu.Lock()
	if h.removed {
		p.mu.Unlock()
		return
	}
	h.removed = true
	// If the pacer is waiting for this flow, wake it to wait for the next one (or idle).
	wake := h.idx == 0 && p.waiting
	if h.idx >= 0 {
		p.heap.remove(h.idx)
	}
	if p.running == h && goroutineID() != p.goid {
		for p.running == h {
			p.cond.Wait()
		}
	}
	p.mu.Unlock()
	if wake {
		p.w.Wake()
	}
}

// Close stops the pacer goroutine and waits for it to exit; a pending Wait is ended with Wake.
// After Close returns Release is not running and is never called again (when Close is called
// from inside Release it returns at once and the goroutine exits after that Release). Close is
// idempotent and always returns nil. It does not close the Waiter.
func (p *Pacer) Close() error {
	p.mu.Lock()
	p.closed = true
	self := p.running != nil && goroutineID() == p.goid
	p.mu.Unlock()
	p.w.Wake()
	if !self {
		<-p.done
	}
	return nil
}

// Stats returns a snapshot of the pacer's statistics. It is safe to call at any time.
func (p *Pacer) Stats() Stats {
	p.mu.Lock()
	st := p.stats // an 8 KB copy: the quantiles are computed without holding up the pacer
	p.mu.Unlock()
	return st.snapshot()
}

func (p *Pacer) run(started chan<- struct{}) {
	defer close(p.done)
	p.mu.Lock()
	p.goid = goroutineID()
	p.mu.Unlock()
	close(started)

	var (
		cycle     bool   // a Release ran since the last Wait
		cycleSent uint64 // packets released since the last Wait
	)
	// The loop holds p.mu at the top of each iteration, with now freshly read (before locking,
	// so the clock, which may take its own lock, is never called under p.mu).
	now := p.now()
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return
		}
		if len(p.heap) == 0 || p.heap[0].at.After(now) {
			if cycle {
				p.stats.perWake.record(cycleSent)
				cycle, cycleSent = false, 0
			}
			var deadline time.Time
			if len(p.heap) > 0 {
				deadline = p.heap[0].at
			} else {
				p.stats.idleBlocks++
			}
			p.waiting, p.waitDeadline = true, deadline
			p.mu.Unlock()
			woken := p.w.Wait(deadline)
			now = p.now()
			p.mu.Lock()
			p.waiting = false
			p.stats.wake(woken)
			continue
		}
		h := p.heap.pop()
		scheduled := h.at
		p.running = h
		p.mu.Unlock()

		sent, next := h.f.Release(now, p.burst)

		after := p.now()
		p.mu.Lock()
		p.running = nil
		if h.removed {
			p.cond.Broadcast()
		} else {
			if sent <= 0 && !next.IsZero() && !next.After(now) {
				next = now.Add(StallDelay)
				p.stats.stalls++
			}
			p.requeue(h, next)
		}
		sent = max(sent, 0)
		p.stats.release(uint64(sent), scheduled, now)
		cycle = true
		cycleSent += uint64(sent)
		now = after
	}
}

// requeue puts h back at next (zero = idle). If Schedule queued it during Release, the earlier
// of the two times wins. Called with p.mu held.
func (p *Pacer) requeue(h *Handle, next time.Time) {
	switch {
	case next.IsZero():
	case h.idx >= 0:
		if next.Before(h.at) {
			h.at = next
			p.heap.fix(h.idx)
		}
	default:
		h.at = next
		p.heap.push(h)
	}
}
