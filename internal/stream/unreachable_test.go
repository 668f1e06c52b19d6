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
