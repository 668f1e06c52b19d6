package stream

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

// A port-unreachable report never ends a connection whose peer keeps talking, and ends one whose
// peer went silent after the grace (2 keep-alive intervals + one RTO), long before IdleTimeout.
func TestUnreachableHint(t *testing.T) {
	l := newLink(5, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newPair(l, pairOpts{isnA: 7, isnB: 70, idle: 30 * time.Second})
	transfer(t, l, 100_000, true, time.Minute)

	// Forged reports while the peer is alive: at every event of 20 s of idle keep-alives (at
	// least every 100 ms apart, so about one per keep-alive).
	var next time.Time
	l.inject = func(i int, now time.Time) {
		if i == 0 && !now.Before(next) {
			l.ep[0].OnUnreachable(now)
			next = now.Add(100 * time.Millisecond)
		}
	}
	start := l.now
	l.run([2]*app{}, start.Add(20*time.Second), func() bool { return l.ep[0].Err() != nil })
	if err := l.ep[0].Err(); err != nil {
		t.Fatalf("forged reports ended a live connection after %v: %v", l.now.Sub(start), err)
	}
	if n := l.ep[0].Stats().Unreachable; n < 15 {
		t.Fatalf("%d reports counted in 20 s, want one per keep-alive at least", n)
	}

	// The peer goes silent and its host answers port unreachable once.
	l.inject = nil
	l.rules[1].drop = func([]byte) bool { return true }
	l.run([2]*app{}, l.now.Add(time.Second), func() bool { return false })
	silentFrom := l.delivered[0]
	l.ep[0].OnUnreachable(l.now)
	reported := l.now
	grace := l.ep[0].unreachableGrace()
	l.run([2]*app{}, l.now.Add(time.Minute), func() bool { return l.ep[0].Err() != nil })
	err := l.ep[0].Err()
	var pe *PeerIdleError
	if !errors.As(err, &pe) || !pe.Refused || !errors.Is(err, syscall.ECONNREFUSED) || !pe.Timeout() {
		t.Fatalf("Err() = %v, want a refused *PeerIdleError", err)
	}
	if took := l.now.Sub(reported); took != grace {
		t.Fatalf("broke %v after the report, want the grace %v", took, grace)
	}
	if want := 2*time.Second + l.ep[0].rtt.Timeout(); grace != want || l.now.Sub(silentFrom) > 5*time.Second {
		t.Fatalf("grace %v (want %v); silent %v before breaking, idle timeout 30 s", grace, want, l.now.Sub(silentFrom))
	}
	t.Logf("broke %v after the report, %v after the peer's last packet: %v", grace, l.now.Sub(silentFrom), err)
}

// When the idle timeout fires before a report's grace ends (a report late in the silence, or a
// backed-off RTO that stretches the grace to IdleTimeout), a report that came after the peer was
// last heard from still marks the error as refused, and one the peer answered since does not.
func TestUnreachableIdleFirst(t *testing.T) {
	for _, answered := range []bool{false, true} {
		l := newLink(5, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
		newPair(l, pairOpts{isnA: 7, isnB: 70, idle: 400 * time.Millisecond})
		transfer(t, l, 100_000, true, time.Minute)
		if answered {
			l.ep[0].OnUnreachable(l.now) // then a keep-alive comes: the report is stale
			l.run([2]*app{}, l.now.Add(1500*time.Millisecond), func() bool { return false })
			if l.ep[0].Err() != nil {
				t.Fatal(l.ep[0].Err())
			}
		}
		l.rules[1].drop = func([]byte) bool { return true }
		l.run([2]*app{}, l.now.Add(100*time.Millisecond), func() bool { return false }) // nothing left in flight
		if !answered {
			// Report late enough that the idle timeout comes before the grace ends.
			grace := l.ep[0].unreachableGrace()
			l.run([2]*app{}, l.delivered[0].Add(400*time.Millisecond-grace/2), func() bool { return false })
			l.ep[0].OnUnreachable(l.now)
			if due, _ := l.ep[0].unreachableDue(); due <= l.ep[0].lastRecv+400*time.Millisecond {
				t.Fatalf("the report's grace ends first (%v ≤ %v): the test does not test the idle path", due, l.ep[0].lastRecv+400*time.Millisecond)
			}
		}
		l.run([2]*app{}, l.now.Add(time.Minute), func() bool { return l.ep[0].Err() != nil })
		var pe *PeerIdleError
		if err := l.ep[0].Err(); !errors.As(err, &pe) {
			t.Fatalf("answered %v: Err() = %v, want a *PeerIdleError", answered, err)
		}
		t.Logf("answered %v: grace %v, %v", answered, l.ep[0].unreachableGrace(), pe)
		if pe.Refused == answered || errors.Is(pe, syscall.ECONNREFUSED) == answered {
			t.Fatalf("answered %v: Refused %v (%v)", answered, pe.Refused, pe)
		}
	}
}
