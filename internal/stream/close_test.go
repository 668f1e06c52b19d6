package stream

import (
	"bytes"
	"errors"
	"io"
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

func isShutdownPkt(b []byte) bool {
	t, err := packet.Type(b)
	return err == nil && t == packet.TypeShutdown
}

// Close returns at once and the engine still delivers everything written, through loss, then
// sends Shutdown; the peer reads all of it and io.EOF, answers, and the closer is Done.
func TestCloseDeliversThenShutdown(t *testing.T) {
	r := linkRules{delay: 2 * time.Millisecond, loss: 0.05, reorder: 0.02}
	l := newLink(41, r, r)
	newPair(l, pairOpts{isnA: 7, isnB: 8, ccA: &fixedCC{period: 20 * time.Microsecond}})
	src := randomBytes(41, 1<<20)
	if n := l.ep[0].Write(src); n != len(src) {
		t.Fatalf("wrote %d", n)
	}
	l.ep[0].Close(l.now, time.Minute)
	if l.ep[0].Write([]byte("x")) != 0 {
		t.Fatal("Write accepted bytes after Close")
	}
	if settled, _, _ := l.ep[0].CloseResult(); settled || l.ep[0].Done() {
		t.Fatal("a close with unsent data settled at once")
	}
	b := &app{rbuf: make([]byte, 10000)}
	if !l.run([2]*app{nil, b}, l.now.Add(time.Minute), func() bool { return b.eof && l.ep[0].Done() }) {
		t.Fatalf("not done: read %d/%d, eof %v, A done %v", len(b.dst), len(src), b.eof, l.ep[0].Done())
	}
	if !bytes.Equal(b.dst, src) {
		t.Fatal("data differs")
	}
	settled, unacked, why := l.ep[0].CloseResult()
	if !settled || unacked != 0 || why != CloseFlushed {
		t.Fatalf("CloseResult = %v, %d, %v; want settled, 0, flushed", settled, unacked, why)
	}
	if !l.ep[0].NextTimer().IsZero() || !l.ep[0].Departure().IsZero() {
		t.Fatal("a Done endpoint still arms a timer or a departure")
	}
	if l.ep[1].Err() != nil {
		t.Fatalf("peer error %v", l.ep[1].Err())
	}
}

// TestCloseHugeLinger: a linger as large as time.Duration allows means "wait for every
// acknowledgement"; t + linger overflowed, the close settled at once and sent Shutdown, and the
// peer read a clean EOF after the first packet (found by a new user's check with
// Config.Linger = math.MaxInt64).
func TestCloseHugeLinger(t *testing.T) {
	r := linkRules{delay: 2 * time.Millisecond}
	l := newLink(43, r, r)
	newPair(l, pairOpts{isnA: 7, isnB: 8, ccA: &fixedCC{period: 100 * time.Microsecond}})
	l.now = l.now.Add(time.Second) // a connection that has run a while: t > 0
	src := randomBytes(43, 256<<10)
	if n := l.ep[0].Write(src); n != len(src) {
		t.Fatalf("wrote %d", n)
	}
	l.ep[0].Close(l.now, time.Duration(math.MaxInt64))
	if settled, _, _ := l.ep[0].CloseResult(); settled {
		t.Fatal("a close with unsent data and an unbounded linger settled at once")
	}
	b := &app{rbuf: make([]byte, 10000)}
	if !l.run([2]*app{nil, b}, l.now.Add(time.Minute), func() bool { return b.eof && l.ep[0].Done() }) {
		t.Fatalf("not done: read %d/%d, eof %v", len(b.dst), len(src), b.eof)
	}
	if !bytes.Equal(b.dst, src) {
		t.Fatalf("the peer read %d of %d bytes before EOF", len(b.dst), len(src))
	}
}

// When the peer stops acknowledging, the close settles at the linger deadline with the bytes
// left unacknowledged, and Shutdown is sent 1 + shutdownResends times, max(2·RTT, 20 ms) apart,
// before the engine gives up (a peer that never answers, as UDT4).
func TestCloseLingerExpires(t *testing.T) {
	r := linkRules{delay: time.Millisecond}
	shut := 0
	var shutAt []time.Time
	l := newLink(42, r, r)
	toB := r
	toB.drop = func(b []byte) bool {
		if isShutdownPkt(b) {
			shut++
			shutAt = append(shutAt, l.now)
		}
		return false
	}
	l.rules[0] = toB
	newPair(l, pairOpts{isnA: 7, isnB: 8, ccA: &fixedCC{period: 20 * time.Microsecond}})
	a := &app{src: randomBytes(42, 100_000), rbuf: make([]byte, 1000)}
	b := &app{rbuf: make([]byte, 1000)}
	l.run([2]*app{a, b}, l.now.Add(time.Second), func() bool { return l.ep[0].Flushed() })
	// The peer vanishes: nothing reaches A any more.
	l.rules[1].loss = 1
	src := randomBytes(43, 50_000)
	l.ep[0].Write(src)
	const linger = 2 * time.Second
	start := l.now
	l.ep[0].Close(l.now, linger)
	if !l.run([2]*app{nil, b}, l.now.Add(time.Minute), func() bool {
		s, _, _ := l.ep[0].CloseResult()
		return s
	}) {
		t.Fatal("the close never settled")
	}
	if el := l.now.Sub(start); el != linger {
		t.Fatalf("settled after %v, want the linger %v", el, linger)
	}
	_, unacked, why := l.ep[0].CloseResult()
	if why != CloseLinger || unacked != len(src) || unacked != l.ep[0].Unacknowledged() {
		t.Fatalf("CloseResult = %d, %v; want %d, linger", unacked, why, len(src))
	}
	settledAt := l.now
	if !l.run([2]*app{nil, b}, l.now.Add(time.Minute), func() bool { return l.ep[0].Done() }) {
		t.Fatal("never Done")
	}
	if shut != 1+shutdownResends {
		t.Fatalf("%d Shutdowns sent, want %d", shut, 1+shutdownResends)
	}
	gap := l.ep[0].shutdownGap()
	for i := 1; i < len(shutAt); i++ {
		if d := shutAt[i].Sub(shutAt[i-1]); d != gap {
			t.Fatalf("Shutdown %d sent %v after the previous, want %v", i, d, gap)
		}
	}
	if el := l.now.Sub(settledAt); el != time.Duration(1+shutdownResends)*gap {
		t.Fatalf("Done %v after the first Shutdown, want %v", el, time.Duration(1+shutdownResends)*gap)
	}
}

// A negative linger sends Shutdown at once, with whatever was unsent counted as unacknowledged;
// the peer's answer makes the engine Done without any re-send.
func TestCloseNoLinger(t *testing.T) {
	r := linkRules{delay: time.Millisecond}
	shut := 0
	toB := r
	toB.drop = func(b []byte) bool {
		if isShutdownPkt(b) {
			shut++
		}
		return false
	}
	l := newLink(44, toB, r)
	newPair(l, pairOpts{isnA: 7, isnB: 8})
	l.ep[0].Write(make([]byte, 5000))
	l.ep[0].Close(l.now, -1)
	settled, unacked, why := l.ep[0].CloseResult()
	if !settled || unacked != 5000 || why != CloseLinger || l.ep[0].PendingControl() != 1 {
		t.Fatalf("CloseResult = %v, %d, %v, %d queued; want settled, 5000, linger, 1 Shutdown",
			settled, unacked, why, l.ep[0].PendingControl())
	}
	b := &app{rbuf: make([]byte, 1000)}
	if !l.run([2]*app{nil, b}, l.now.Add(time.Second), func() bool { return l.ep[0].Done() && b.eof }) {
		t.Fatal("not done")
	}
	if shut != 1 || len(b.dst) != 0 || l.ep[0].Stats().PktSent != 0 {
		t.Fatalf("%d Shutdowns, %d bytes delivered, %d sent; want 1, 0, 0", shut, len(b.dst), l.ep[0].Stats().PktSent)
	}
}

// A connection that broke, or whose peer shut down first, is Done as soon as it is closed, and
// sends nothing more.
func TestCloseAfterBreakOrPeerShutdown(t *testing.T) {
	r := linkRules{delay: time.Millisecond}
	l := newLink(45, r, r)
	newPair(l, pairOpts{isnA: 7, isnB: 8, idle: 2 * time.Second})
	l.rules[0].loss, l.rules[1].loss = 1, 1
	l.ep[0].Write(make([]byte, 3000))
	l.run([2]*app{}, l.now.Add(time.Minute), func() bool { return l.ep[0].Err() != nil })
	for l.ep[0].PendingControl() > 0 {
		l.ep[0].PopControl()
	}
	l.ep[0].Close(l.now, time.Minute)
	if _, unacked, why := l.ep[0].CloseResult(); !l.ep[0].Done() || why != CloseBroken || unacked != 3000 || l.ep[0].PendingControl() != 0 {
		t.Fatalf("broken: done %v, %d, %v, %d queued", l.ep[0].Done(), unacked, why, l.ep[0].PendingControl())
	}

	l = newLink(46, r, r)
	newPair(l, pairOpts{isnA: 7, isnB: 8})
	l.rules[1].loss = 1 // B's ACKs are lost, its Shutdown is not (below)
	l.ep[0].Write(make([]byte, 3000))
	l.run([2]*app{}, l.now.Add(100*time.Millisecond), func() bool { return false })
	l.rules[1].loss = 0
	l.ep[1].Close(l.now, -1)
	l.run([2]*app{}, l.now.Add(time.Second), func() bool { return l.ep[0].PeerClosed() })
	l.flush(0) // the answer to B's Shutdown
	l.ep[0].Close(l.now, time.Minute)
	if _, unacked, why := l.ep[0].CloseResult(); !l.ep[0].Done() || why != ClosePeer || unacked != 3000 || l.ep[0].PendingControl() != 0 {
		t.Fatalf("peer first: done %v, %d, %v, %d queued", l.ep[0].Done(), unacked, why, l.ep[0].PendingControl())
	}
}

// The control queue is bounded: a caller that never drains loses packets (counted), never
// memory.
func TestControlQueueBound(t *testing.T) {
	now := time.Unix(100, 0)
	e := New(Config{LocalID: 5, PeerID: 6, ISN: 1, PeerISN: 2, Start: now}, now)
	ka := ctrlPkt(packet.TypeKeepAlive, 0, 5, 0)
	for i := 0; i < 10000; i++ {
		now = now.Add(time.Second)
		e.HandlePacket(now, ka) // each is answered: a 16-byte keep-alive
	}
	if got := len(e.ctrlq.buf); got > maxCtrlQueue {
		t.Fatalf("queue holds %d bytes", got)
	}
	st := e.Stats()
	if st.CtrlQueueDrops == 0 || st.CtrlQueueDrops+uint64(e.PendingControl()) != st.KeepAliveSent {
		t.Fatalf("drops %d + queued %d != sent %d", st.CtrlQueueDrops, e.PendingControl(), st.KeepAliveSent)
	}
	n, size := 0, 0
	for {
		b, ok := e.PopControl()
		if !ok {
			break
		}
		if !isKeepAlive(b) {
			t.Fatalf("packet %d is not a keep-alive: %x", n, b)
		}
		n, size = n+1, len(b)
	}
	if n != maxCtrlQueue/size || e.PendingControl() != 0 {
		t.Fatalf("popped %d, want %d", n, maxCtrlQueue/size)
	}
}

// A close whose linger passes sends Shutdown with data undelivered. If packets after the hole
// had arrived, the peer reads everything before it and then a *TruncatedError matching
// io.ErrUnexpectedEOF, never io.EOF; a peer that got everything reads io.EOF
// (TestCloseDeliversThenShutdown).
func TestShutdownAfterGapIsTruncated(t *testing.T) {
	r := linkRules{delay: time.Millisecond}
	const isn, hole = 7, 17 // every copy of data packet 17 is lost
	toB := r
	toB.drop = func(b []byte) bool {
		return len(b) >= 4 && b[0]&0x80 == 0 && be.Uint32(b) == hole
	}
	l := newLink(45, toB, r)
	newPair(l, pairOpts{isnA: isn, isnB: 8, ccA: &fixedCC{period: 20 * time.Microsecond}})
	src := randomBytes(45, 100_000)
	if n := l.ep[0].Write(src); n != len(src) {
		t.Fatalf("wrote %d", n)
	}
	l.ep[0].Close(l.now, 2*time.Second)
	b := &app{rbuf: make([]byte, 1000)}
	if !l.run([2]*app{nil, b}, l.now.Add(time.Minute), func() bool { return l.ep[0].Done() && (b.eof || b.readErr != nil) }) {
		t.Fatal("not done")
	}
	if _, unacked, why := l.ep[0].CloseResult(); why != CloseLinger || unacked == 0 {
		t.Fatalf("CloseResult = %d unacked, %v; want some, linger", unacked, why)
	}
	var te *TruncatedError
	if b.eof || !errors.As(b.readErr, &te) || !errors.Is(b.readErr, io.ErrUnexpectedEOF) {
		t.Fatalf("reader: eof %v, error %v; want a *TruncatedError matching io.ErrUnexpectedEOF", b.eof, b.readErr)
	}
	if te.First != hole {
		t.Fatalf("TruncatedError.First = %d, want %d", te.First, hole)
	}
	per := l.ep[0].payloadSize
	if want := (hole - isn) * per; !bytes.Equal(b.dst, src[:want]) {
		t.Fatalf("read %d bytes, want the %d before the hole", len(b.dst), want)
	}
	// Further reads give the same error.
	if _, err := l.ep[1].Read(b.rbuf); !errors.As(err, &te) {
		t.Fatalf("second Read: %v", err)
	}
}

// A close whose peer vanishes and whose host reports the port unreachable settles when the
// report's grace breaks the connection, long before the linger: found by a hostile check, the
// break came but the close never settled, so CloseContext waited forever and the connection
// (its send buffer, its socket's goroutines) was never freed.
func TestCloseSettlesOnUnreachableBreak(t *testing.T) {
	r := linkRules{delay: time.Millisecond}
	l := newLink(42, r, r)
	newPair(l, pairOpts{isnA: 7, isnB: 8, ccA: &fixedCC{period: 20 * time.Microsecond}})
	a := &app{src: randomBytes(42, 100_000), rbuf: make([]byte, 1000)}
	b := &app{rbuf: make([]byte, 1000)}
	l.run([2]*app{a, b}, l.now.Add(time.Second), func() bool { return l.ep[0].Flushed() })
	l.rules[1].loss = 1 // the peer vanishes
	l.rules[0].loss = 1
	src := randomBytes(43, 50_000)
	l.ep[0].Write(src)
	l.ep[0].Close(l.now, time.Minute)
	l.run([2]*app{nil, b}, l.now.Add(100*time.Millisecond), func() bool { return false })
	l.ep[0].OnUnreachable(l.now) // its host answers port unreachable
	reported := l.now
	if !l.run([2]*app{nil, b}, l.now.Add(30*time.Second), func() bool { return l.ep[0].Done() }) {
		s, unacked, why := l.ep[0].CloseResult()
		t.Fatalf("not Done 30 s after the report (linger 1 min): settled %v, %d unacknowledged (%v), Err %v", s, unacked, why, l.ep[0].Err())
	}
	if _, unacked, _ := l.ep[0].CloseResult(); unacked != len(src) || !errors.Is(l.ep[0].Err(), syscall.ECONNREFUSED) {
		t.Fatalf("CloseResult: %d unacknowledged, Err %v; want %d and a refused break", unacked, l.ep[0].Err(), len(src))
	}
	t.Logf("Done %v after the report", l.now.Sub(reported))
}
