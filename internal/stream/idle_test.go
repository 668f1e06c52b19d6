package stream

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

// An idle, fully acknowledged pair wakes about once per second per endpoint and stays up; when one
// side goes silent the other breaks after IdleTimeout (±10 %) with a timeout net.Error.
func TestIdleKeepAliveAndDeadPeer(t *testing.T) {
	l := newLink(3, linkRules{delay: time.Millisecond}, linkRules{delay: time.Millisecond})
	newPair(l, pairOpts{isnA: 42, isnB: 4242})
	transfer(t, l, 200_000, true, time.Minute)

	// Idle for 60 s: keep-alives only.
	l.wakes = [2]int{}
	sent0 := l.sent
	start := l.now
	if l.run([2]*app{}, start.Add(60*time.Second), func() bool { return false }) {
		t.Fatal("run ended early")
	}
	for i, e := range l.ep {
		if err := e.Err(); err != nil {
			t.Fatalf("endpoint %d broke while idle: %v", i, err)
		}
		pkts := l.sent[i] - sent0[i]
		if pkts < 50 || pkts > 70 {
			t.Errorf("endpoint %d sent %d packets in 60 s idle, want ≈ 60 keep-alives", i, pkts)
		}
		if d := e.NextTimer().Sub(l.now); d < 0 || d > 2*time.Second {
			t.Errorf("endpoint %d next timer in %v", i, d)
		}
		if m := e.snd.Memory() + e.rcv.Memory(); m != 0 {
			t.Errorf("endpoint %d holds %d bytes of buffers while idle", i, m)
		}
	}
	// One end leads on its timer, the other answers from its receive path (timers.go).
	if w := l.wakes[0] + l.wakes[1]; w > 70 {
		t.Errorf("the pair woke %v times in 60 s idle, want ≈ 60 in all", l.wakes)
	}
	if a := l.ep[0].Stats().KeepAliveAnswers + l.ep[1].Stats().KeepAliveAnswers; a < 50 {
		t.Errorf("%d keep-alives answered in 60 s idle, want ≈ 60", a)
	}
	t.Logf("idle 60 s: wakes %v, packets %v", l.wakes, [2]int{l.sent[0] - sent0[0], l.sent[1] - sent0[1]})

	// Endpoint 1 goes silent (its packets are lost) while 0 has data in flight.
	l.rules[1].drop = func([]byte) bool { return true }
	silent := l.now
	a := &app{src: randomBytes(9, 100_000), rbuf: make([]byte, 4096)}
	l.run([2]*app{a, nil}, silent.Add(time.Minute), func() bool { return l.ep[0].Err() != nil })
	err := l.ep[0].Err()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Err() = %v, want a timeout net.Error", err)
	}
	var pe *PeerIdleError
	if !errors.As(err, &pe) {
		t.Fatalf("Err() = %T", err)
	}
	took := l.now.Sub(l.delivered[0])
	if took < 9*time.Second || took > 11*time.Second {
		t.Fatalf("dead peer detected after %v of silence, want 10 s ± 10 %%", took)
	}
	t.Logf("dead peer: %v after silence (%v); timeouts %d", took, err, l.ep[0].Stats().Timeouts)
	if n, err := l.ep[0].Read(make([]byte, 10)); n != 0 || err != pe {
		t.Fatalf("Read after break = %d, %v", n, err)
	}
	if l.ep[0].Write([]byte("x")) != 0 || !l.ep[0].CanWrite() || !l.ep[0].CanRead() {
		t.Fatal("a broken endpoint must refuse writes and wake readers and writers")
	}
	if !l.ep[0].NextTimer().IsZero() || !l.ep[0].Departure().IsZero() {
		t.Fatal("a broken endpoint must arm no timer and no departure")
	}
}

// Shutdown after the close ends the peer's stream with io.EOF once all data is read.
func TestShutdownEOF(t *testing.T) {
	l := newLink(4, linkRules{delay: time.Millisecond, loss: 0.05}, linkRules{delay: time.Millisecond, loss: 0.05})
	newPair(l, pairOpts{isnA: 1, isnB: 2, ccA: &fixedCC{period: 20 * time.Microsecond}})
	a := &app{src: randomBytes(5, 300_000), rbuf: make([]byte, 1000)}
	b := &app{rbuf: make([]byte, 777)}
	if !l.run([2]*app{a, b}, l.now.Add(time.Minute), func() bool {
		return a.written == len(a.src) && l.ep[0].Flushed()
	}) {
		t.Fatal("not flushed")
	}
	l.ep[0].Close(l.now, 0)
	if !l.ep[0].Departure().IsZero() || l.ep[0].Write([]byte("x")) != 0 {
		t.Fatal("after Shutdown nothing more may be sent")
	}
	if !l.run([2]*app{nil, b}, l.now.Add(time.Minute), func() bool { return b.eof }) {
		t.Fatalf("no EOF: %d bytes, peerClosed %v", len(b.dst), l.ep[1].PeerClosed())
	}
	if string(b.dst) != string(a.src) {
		t.Fatal("data differs")
	}
	if _, err := l.ep[1].Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read after EOF = %v", err)
	}
	if l.ep[1].Err() != nil {
		t.Fatalf("peer Shutdown must not be an error: %v", l.ep[1].Err())
	}
}

// A peer that never answers ACKs with ACK2 cannot keep the receiver's ACK timer busy: the repeats
// of an unconfirmed ACK back off.
func TestUnconfirmedACKBackoff(t *testing.T) {
	r := linkRules{delay: time.Millisecond}
	noACK2 := r
	noACK2.drop = func(b []byte) bool {
		typ, err := packet.Type(b)
		return err == nil && typ == packet.TypeACK2
	}
	l := newLink(13, noACK2, r)
	newPair(l, pairOpts{isnA: 1, isnB: 2})
	transfer(t, l, 100_000, false, time.Minute)
	before := l.ep[1].Stats().ACKSent
	l.run([2]*app{}, l.now.Add(30*time.Second), func() bool { return false })
	n := l.ep[1].Stats().ACKSent - before
	t.Logf("%d ACK repeats in 30 s idle without ACK2", n)
	if n > 20 {
		t.Fatalf("%d ACK repeats in 30 s without ACK2", n)
	}
	if l.ep[0].Err() != nil || l.ep[1].Err() != nil {
		t.Fatal("broke")
	}
}
