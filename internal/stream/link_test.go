package stream

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/packet"
)

// fixedCC is a trivial controller for tests: a constant period and window.
type fixedCC struct {
	period time.Duration
	window float64
	events struct{ acks, losses, timeouts, sent, recv int }
}

func (c *fixedCC) Init(time.Time, congestion.Params)       {}
func (c *fixedCC) OnACK(time.Time, congestion.ACK)         { c.events.acks++ }
func (c *fixedCC) OnLoss(time.Time, congestion.Loss)       { c.events.losses++ }
func (c *fixedCC) OnTimeout(time.Time)                     { c.events.timeouts++ }
func (c *fixedCC) OnPacketSent(time.Time, uint32, int)     { c.events.sent++ }
func (c *fixedCC) OnPacketReceived(time.Time, uint32, int) { c.events.recv++ }
func (c *fixedCC) State() congestion.State {
	return congestion.State{Period: c.period, Window: c.window}
}

// linkRules shape one direction of the in-test link.
type linkRules struct {
	delay     time.Duration // one-way propagation delay
	rate      int64         // bytes/s serialisation rate, 0 = infinite
	queue     int           // drop-tail queue limit in packets when rate > 0 (0 = 1000)
	loss      float64       // probability a packet is lost
	dup       float64       // probability a packet is duplicated
	reorder   float64       // probability a packet is held back by up to 4·delay+1ms extra
	reorderBy time.Duration // if set, a reordered packet is held back exactly this long instead
	dropNAK   bool          // drop every NAK
	drop      func(b []byte) bool
	mtu       int  // drop datagrams longer than mtu bytes (0: no limit) unless fragmentable
	icmp      bool // with mtu: tell the sender the path's size (OnPathMTU), as the kernel would
}

type inflightPkt struct {
	at  time.Time
	n   uint64 // tie-breaker: FIFO among equal times
	to  int
	buf []byte
}

type pktHeap []inflightPkt

func (h pktHeap) Len() int { return len(h) }
func (h pktHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].n < h[j].n
}
func (h pktHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pktHeap) Push(x any)   { *h = append(*h, x.(inflightPkt)) }
func (h *pktHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// link is a deterministic two-endpoint network stepped in virtual time.
type link struct {
	now       time.Time
	rng       *rand.Rand
	rules     [2]linkRules // rules[i]: packets sent by endpoint i
	ep        [2]*Endpoint
	q         pktHeap
	n         uint64
	busy      [2]time.Time // serialisation: when the link from i is free
	inQ       [2]int
	sent      [2]int
	lost      [2]int
	pool      [][]byte
	wakes     [2]int                                // OnTimer calls per endpoint
	delivered [2]time.Time                          // last delivery to each endpoint
	inject    func(i int, now time.Time)            // called every step, may feed packets to ep[i]
	onDeliver func(to int, now time.Time, b []byte) // called before each delivery (b only during the call)
	mtuDrops  [2]int                                // datagrams dropped for exceeding rules[i].mtu
	frags     [2]int                                // datagrams above rules[i].mtu let through as fragmentable
	maxDF     [2]int                                // the longest datagram sent with Don't Fragment
	// lazy arms timers as a pacer that only moves them earlier would: moved only earlier after
	// engine calls, re-read when they fire, so a postponed deadline still wakes the endpoint.
	// Otherwise they are armed exactly, as conn does.
	lazy  bool
	armed [2]time.Time
	// views sends as conn does: ReleaseViews, the packets put on the wire (header and payload
	// gathered) only after the next step's application work and deliveries, as a send system
	// call outside the engine's lock would be, then Unpin.
	views bool
	pend  [2]viewBatch
}

// viewBatch is one ReleaseViews call's packets, not yet sent, and a copy of each taken at the
// release.
type viewBatch struct {
	hdrs, pays [][]byte
	n          int
	want       [][]byte
}

// sendViews puts endpoint i's pending views on the wire and unpins its send buffer. A packet
// whose bytes changed since its release is a broken pin: it panics.
func (l *link) sendViews(i int) {
	v := &l.pend[i]
	if v.n == 0 {
		return
	}
	for k := range v.n {
		p := append(append([]byte(nil), v.hdrs[k]...), v.pays[k]...)
		if string(p) != string(v.want[k]) {
			panic(fmt.Sprintf("endpoint %d: packet %d of a pinned batch changed before its send", i, k))
		}
		l.send(i, p)
		v.hdrs[k], v.pays[k] = v.hdrs[k][:cap(v.hdrs[k])], nil
	}
	v.n = 0
	l.ep[i].Unpin()
}

// releaseViews releases endpoint i's due packets as views and copies them for sendViews' check.
func (l *link) releaseViews(i int) {
	v := &l.pend[i]
	v.n, _ = l.ep[i].ReleaseViews(l.now, v.hdrs, v.pays)
	v.want = v.want[:0]
	for k := range v.n {
		v.want = append(v.want, append(append([]byte(nil), v.hdrs[k]...), v.pays[k]...))
	}
}

// timerAt returns when endpoint i's timer wakes it next.
func (l *link) timerAt(i int) time.Time {
	nt := l.ep[i].NextTimer()
	if !l.lazy {
		return nt
	}
	if l.armed[i].IsZero() || (!nt.IsZero() && nt.Before(l.armed[i])) {
		l.armed[i] = nt
	}
	return l.armed[i]
}

func newLink(seed uint64, r0, r1 linkRules) *link {
	return &link{
		now:   time.Unix(1_700_000_000, 0),
		rng:   rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15)),
		rules: [2]linkRules{r0, r1},
	}
}

func (l *link) buf() []byte {
	if n := len(l.pool); n > 0 {
		b := l.pool[n-1]
		l.pool = l.pool[:n-1]
		return b[:0]
	}
	return make([]byte, 0, 1500)
}

func isNAK(b []byte) bool {
	t, err := packet.Type(b)
	return err == nil && t == packet.TypeNAK
}

// send puts a datagram from endpoint i on the wire.
func (l *link) send(i int, b []byte) {
	r := &l.rules[i]
	l.sent[i]++
	frag := l.fragmentable(i, b)
	if !frag {
		l.maxDF[i] = max(l.maxDF[i], len(b))
	}
	if r.mtu > 0 && len(b) > r.mtu {
		if !frag {
			l.lost[i]++
			l.mtuDrops[i]++
			if r.icmp {
				l.ep[i].OnPathMTU(l.now, r.mtu)
			}
			return
		}
		l.frags[i]++
	}
	if (r.dropNAK && isNAK(b)) || (r.drop != nil && r.drop(b)) || (r.loss > 0 && l.rng.Float64() < r.loss) {
		l.lost[i]++
		return
	}
	copies := 1
	if r.dup > 0 && l.rng.Float64() < r.dup {
		copies = 2
	}
	for c := 0; c < copies; c++ {
		at := l.now
		if r.rate > 0 {
			limit := r.queue
			if limit == 0 {
				limit = 1000
			}
			if l.inQ[i] >= limit {
				l.lost[i]++
				continue
			}
			if l.busy[i].Before(at) {
				l.busy[i] = at
			}
			l.busy[i] = l.busy[i].Add(time.Duration(int64(len(b)+28) * int64(time.Second) / r.rate))
			at = l.busy[i]
			l.inQ[i]++
		}
		at = at.Add(r.delay)
		if r.reorder > 0 && l.rng.Float64() < r.reorder {
			if r.reorderBy > 0 {
				at = at.Add(r.reorderBy)
			} else {
				at = at.Add(time.Duration(l.rng.Int64N(int64(4*r.delay + time.Millisecond))))
			}
		}
		p := append(l.buf(), b...)
		heap.Push(&l.q, inflightPkt{at: at, n: l.n, to: 1 - i, buf: p})
		l.n++
	}
}

// fragmentable reports whether conn would send b from endpoint i with fragmentation allowed: a
// data packet longer than the packet size that is not the path MTU probe (pmtud.go).
func (l *link) fragmentable(i int, b []byte) bool {
	e := l.ep[i]
	if e == nil || len(b) <= e.PacketSize() || len(b) < headerSize || packet.IsControl(b) {
		return false
	}
	seq, probing := e.ProbeSeq()
	return !probing || be.Uint32(b) != seq
}

// flush puts the control packets endpoint i queued on the wire, as conn does after every call.
func (l *link) flush(i int) {
	e := l.ep[i]
	if e == nil {
		return
	}
	for {
		b, ok := e.PopControl()
		if !ok {
			return
		}
		l.send(i, b)
	}
}

// app is the application on top of one endpoint: it writes src and reads into dst.
type app struct {
	src     []byte
	written int
	dst     []byte
	rbuf    []byte
	eof     bool
	readErr error
}

// run steps the link until done() or the virtual deadline; it returns false on timeout.
func (l *link) run(apps [2]*app, until time.Time, done func() bool) bool {
	bufs := make([][]byte, 32)
	for i := range bufs {
		bufs[i] = make([]byte, max(l.ep[0].pktSize, l.ep[1].pktSize))
	}
	for i := range l.pend {
		l.pend[i].hdrs, l.pend[i].pays = make([][]byte, len(bufs)), make([][]byte, len(bufs))
		for k := range l.pend[i].hdrs {
			l.pend[i].hdrs[k] = make([]byte, headerSize)
		}
	}
	// work is the applications' turn: each writes what the send buffer takes and reads what
	// arrived.
	work := func() {
		for i, a := range apps {
			e := l.ep[i]
			if a == nil || e == nil {
				continue
			}
			for a.written < len(a.src) && e.CanWrite() {
				n := e.Write(a.src[a.written:])
				if n == 0 {
					break
				}
				a.written += n
			}
			for e.CanRead() && !a.eof && a.readErr == nil {
				n, err := e.Read(a.rbuf)
				l.flush(i) // a window update
				a.dst = append(a.dst, a.rbuf[:n]...)
				if err != nil {
					if err.Error() == "EOF" {
						a.eof = true
					} else {
						a.readErr = err
					}
				}
				if n == 0 {
					break
				}
			}
		}
	}
	for step := 0; step < 50_000_000; step++ {
		l.flush(0) // what direct calls between runs queued
		l.flush(1)
		work()
		if done() {
			return true
		}
		// Next event.
		next := until
		if l.pend[0].n > 0 || l.pend[1].n > 0 {
			next = l.now // the sends in flight complete at once, after this step's calls
		}
		if len(l.q) > 0 && l.q[0].at.Before(next) {
			next = l.q[0].at
		}
		for i, e := range l.ep {
			if d := e.Departure(); !d.IsZero() && d.Before(next) {
				next = d
			}
			if d := l.timerAt(i); !d.IsZero() && d.Before(next) {
				next = d
			}
		}
		if next.After(l.now) {
			l.now = next
		}
		if !l.now.Before(until) {
			return false
		}
		if l.inject != nil {
			l.inject(0, l.now)
			l.inject(1, l.now)
		}
		// Deliver.
		for len(l.q) > 0 && !l.q[0].at.After(l.now) {
			p := heap.Pop(&l.q).(inflightPkt)
			if l.rules[1-p.to].rate > 0 {
				l.inQ[1-p.to]--
			}
			if l.onDeliver != nil {
				l.onDeliver(p.to, l.now, p.buf)
			}
			l.ep[p.to].HandlePacket(l.now, p.buf)
			l.flush(p.to)
			l.delivered[p.to] = l.now
			l.pool = append(l.pool, p.buf)
		}
		if l.pend[0].n > 0 || l.pend[1].n > 0 {
			work() // the applications write into what the ACKs freed before the sends complete
			l.sendViews(0)
			l.sendViews(1)
		}
		// Timers and departures.
		for i, e := range l.ep {
			if d := l.timerAt(i); !d.IsZero() && !d.After(l.now) {
				l.wakes[i]++
				e.OnTimer(l.now)
				l.flush(i)
				l.armed[i] = e.NextTimer()
			}
			if d := e.Departure(); !d.IsZero() && !d.After(l.now) && l.views {
				if l.pend[i].n == 0 { // one send at a time, as conn's sending flag allows
					l.releaseViews(i)
				}
			} else if !d.IsZero() && !d.After(l.now) {
				n, _ := e.Release(l.now, bufs)
				for k := 0; k < n; k++ {
					l.send(i, bufs[k])
					bufs[k] = bufs[k][:cap(bufs[k])]
				}
			}
		}
	}
	return false
}
