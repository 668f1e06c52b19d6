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
	// With a tolerance (Config.Tolerance) the pacer calls Release as soon as the flow's
	// departure is within the tolerance of now, possibly before it: the flow then sends what is
	// due by now + tolerance (a Scheduler with the same tolerance does so), and a next within
	// the tolerance of now likewise asks to be called again at once. A flow called early that
	// sends nothing and returns a later next is next called at that time, not earlier.
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

// Config configures a Pacer. The zero value is valid: MaxBurst, DefaultTolerance, time.Now.
type Config struct {
	// Burst is the max passed to Flow.Release: at most this many packets per flow per call.
	// Zero or negative means MaxBurst (one GSO batch).
	Burst int

	// Tolerance is how far from its scheduled time a departure may be, before or after it: the
	// precision the pacer is asked for, which it trades for CPU. Each wake releases every flow
	// due within the tolerance of now (and each flow, through its Scheduler, every packet due by
	// now + Tolerance: at rates whose packets are closer than a wake costs, several leave per
	// wake as one batch), and a TolerantWaiter (Hybrid) sleeps instead of spinning whenever its
	// wake-up tail fits in the tolerance, or would need a spin over its budget (Hybrid: a tenth of
	// the wait). The Waiter is never asked to wake early: the early side of the tolerance is
	// spent by that release window, the late side by the waiter. Zero
	// means DefaultTolerance; negative means none (Exact): every departure at or after its time,
	// the waiter as precise as it can be. Give the flows' Schedulers the same tolerance.
	Tolerance time.Duration

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
	tw    TolerantWaiter // w, when it takes a tolerance; nil otherwise
	now   func() time.Time
	burst int
	tol   time.Duration // the tolerance in force; 0: exact
	done  chan struct{}

	mu           sync.Mutex
	heap         flowHeap
	closed       bool
	waiting      bool      // the goroutine is in (or about to enter) Wait
	waitDeadline time.Time // the departure that Wait is for; zero = idle
	running      *Handle   // the flow whose Release is in progress
	stats        stats
}

// Handle is a Flow's registration with a Pacer.
type Handle struct {
	p       *Pacer
	f       Flow
	idx     int           // index in p.heap, -1 when not queued; guarded by p.mu
	at      time.Time     // scheduled departure while queued; guarded by p.mu
	removed bool          // guarded by p.mu
	gone    chan struct{} // closed once removed and not running (see Removed)
	// exact: called early (within the tolerance), the flow sent nothing and asked for a later
	// time, so it is not called before that time; cleared by its next Release or a Schedule.
	// Guarded by p.mu.
	exact bool
}

// New starts a pacer goroutine that waits with w. Close ends it. The pacer owns w for its
// lifetime (it alone calls w.Wait) but does not close it: close the Pacer first, then w (the
// backends' Waits after Close fall back to the Go runtime's timer, so a pacer still running on a
// closed one keeps its flows at about 1 ms precision). New panics on a nil w, a programming
// error that would otherwise crash the pacer's goroutine later.
func New(w Waiter, cfg Config) *Pacer {
	if w == nil {
		panic("pacer: New with a nil Waiter")
	}
	p := &Pacer{w: w, now: cfg.Now, burst: cfg.Burst, tol: resolveTolerance(cfg.Tolerance), done: make(chan struct{})}
	if p.now == nil {
		p.now = time.Now
	}
	if p.burst <= 0 {
		p.burst = MaxBurst
	}
	if tw, ok := w.(TolerantWaiter); ok && p.tol > 0 {
		p.tw = tw
	}
	go p.run()
	return p
}

// Tolerance reports the tolerance in force (0: exact).
func (p *Pacer) Tolerance() time.Duration { return p.tol }

// Add registers f. The flow starts idle: Release is not called until Schedule.
func (p *Pacer) Add(f Flow) *Handle {
	return &Handle{p: p, f: f, idx: -1, gone: make(chan struct{})}
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
		h.exact = false
		p.heap.fix(h.idx)
	} else {
		h.at = at
		h.exact = false
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

// Remove unregisters the flow. It is idempotent, safe from any goroutine (including from inside
// any Release) and never blocks: once it returns, the pacer begins no new Release of the flow.
// A Release it has already begun (the one Remove may be called from) is not waited for, as
// time.Timer.Stop does not wait for an AfterFunc's function: it runs to its end, and Removed
// tells when it has. If the pacer was waiting for this flow, it is woken to wait for the next one
// instead (or without deadline when none is left).
func (h *Handle) Remove() {
	p := h.p
	p.mu.Lock()
	if h.removed {
		p.mu.Unlock()
		return
	}
	h.removed = true
	// If the pacer is waiting for this flow (or one due at the same time), wake it to wait for
	// the next one (or idle).
	wake := h.idx >= 0 && p.waiting && h.at.Equal(p.waitDeadline)
	if h.idx >= 0 {
		p.heap.remove(h.idx)
	}
	if p.running != h {
		close(h.gone)
	} // else the pacer goroutine closes it when that Release returns
	p.mu.Unlock()
	if wake {
		p.w.Wake()
	}
}

// Removed returns a channel that is closed once Remove has been called and no Release of the
// flow is in progress: from then on Release is never called. Outside Release, `h.Remove();
// <-h.Removed()` waits for a Release in progress to end; inside it, that would deadlock.
func (h *Handle) Removed() <-chan struct{} { return h.gone }

// Close stops the pacer goroutine; a pending Wait is ended with Wake. Once Close returns,
// Release is never called again. Close waits for the goroutine to exit, except when a Release
// is in progress: then (as from inside that Release, where waiting would deadlock) it returns at
// once and the goroutine exits when that Release returns; Done tells when. Close is idempotent,
// safe from any goroutine, and always returns nil. It does not close the Waiter.
func (p *Pacer) Close() error {
	p.mu.Lock()
	p.closed = true
	inRelease := p.running != nil
	p.mu.Unlock()
	p.w.Wake()
	if !inRelease {
		<-p.done
	}
	return nil
}

// Done returns a channel that is closed when the pacer goroutine has exited (after Close): from
// then on no Release is running or will run.
func (p *Pacer) Done() <-chan struct{} { return p.done }

// Stats returns a snapshot of the pacer's statistics. It is safe to call at any time.
func (p *Pacer) Stats() Stats {
	p.mu.Lock()
	st := p.stats // an 8 KB copy: the quantiles are computed without holding up the pacer
	p.mu.Unlock()
	return st.snapshot()
}

func (p *Pacer) run() {
	defer close(p.done)
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
		if len(p.heap) == 0 || !p.due(p.heap[0], now) {
			if cycle {
				p.stats.perWake.record(cycleSent)
				cycle, cycleSent = false, 0
			}
			var deadline time.Time
			exact := true
			if len(p.heap) > 0 {
				deadline, exact = p.heap[0].at, p.heap[0].exact
			} else {
				p.stats.idleBlocks++
			}
			p.waiting, p.waitDeadline = true, deadline
			p.mu.Unlock()
			woken := p.wait(deadline, exact)
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
			close(h.gone)
		}
		// Called early, with nothing sent and a later time asked for: that time, not earlier
		// (unless a Schedule during the Release queued it anew).
		h.exact = h.idx < 0 && scheduled.After(now) && sent <= 0 && next.After(now)
		if !h.removed {
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

// due reports whether h may be released at now: its departure is within the tolerance of now,
// or, for a flow marked exact, has come. Called with p.mu held.
func (p *Pacer) due(h *Handle, now time.Time) bool {
	if h.exact {
		return !h.at.After(now)
	}
	return !h.at.After(now.Add(p.tol))
}

// wait blocks until the departure at deadline (zero: until Wake), within the tolerance unless
// exact. It runs without p.mu.
func (p *Pacer) wait(deadline time.Time, exact bool) bool {
	if p.tw != nil && !exact && !deadline.IsZero() {
		return p.tw.WaitTolerant(deadline, p.tol)
	}
	return p.w.Wait(deadline)
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
