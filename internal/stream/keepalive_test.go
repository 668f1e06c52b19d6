package stream

import (
	"testing"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

func isKeepAlive(b []byte) bool {
	typ, err := packet.Type(b)
	return err == nil && packet.IsControl(b) && typ == packet.TypeKeepAlive
}

// idlePair returns a pair that has transferred some data and then idled for 10 s, so that the
// keep-alive phases have settled.
func idlePair(t *testing.T, seed uint64, delay time.Duration) *link {
	t.Helper()
	l := newLink(seed, linkRules{delay: delay}, linkRules{delay: delay})
	newPair(l, pairOpts{isnA: 7, isnB: 1<<31 - 100})
	transfer(t, l, 100_000, false, time.Minute)
	l.run([2]*app{}, l.now.Add(10*time.Second), func() bool { return false })
	return l
}

// recordSends makes rules[i] record the virtual time of every packet endpoint i sends, passing
// through those that drop (if non-nil) does not drop.
func recordSends(l *link, i int, times *[]time.Time, drop func([]byte) bool) {
	l.rules[i].drop = func(b []byte) bool {
		*times = append(*times, l.now)
		return drop != nil && drop(b)
	}
}

func maxGap(times []time.Time) time.Duration {
	var g time.Duration
	for k := 1; k < len(times); k++ {
		g = max(g, times[k].Sub(times[k-1]))
	}
	return g
}

// When the leading end's keep-alives stop arriving, the answering end's own timer takes over: it
// never stays silent for more than 2 keep-alive intervals. (It breaks after IdleTimeout, as
// the leader sends nothing else.)
func TestKeepAliveAnswererFallsBack(t *testing.T) {
	l := idlePair(t, 21, time.Millisecond)
	leader := 0
	if l.ep[1].Stats().KeepAliveAnswers < l.ep[0].Stats().KeepAliveAnswers {
		leader = 1
	}
	f := l.ep[1-leader]
	if f.Stats().KeepAliveAnswers < 5 {
		t.Fatalf("no phase lock after 10 s idle: answers %d/%d", l.ep[0].Stats().KeepAliveAnswers, l.ep[1].Stats().KeepAliveAnswers)
	}
	var times []time.Time
	recordSends(l, leader, new([]time.Time), isKeepAlive) // the leader's keep-alives are all lost
	recordSends(l, 1-leader, &times, nil)
	answers := f.Stats().KeepAliveAnswers
	start := l.now
	l.run([2]*app{}, start.Add(9*time.Second), func() bool { return false })
	if l.ep[0].Err() != nil || l.ep[1].Err() != nil {
		t.Fatal("broke before IdleTimeout")
	}
	if f.Stats().KeepAliveAnswers > answers+1 { // one may have been in flight
		t.Fatal("answered keep-alives that never arrived")
	}
	times = append([]time.Time{start}, times...)
	if g := maxGap(times); g > 2*f.kaInterval+time.Millisecond || len(times) < 5 {
		t.Fatalf("answering end sent %d packets in 9 s, longest gap %v (interval %v)", len(times)-1, g, f.kaInterval)
	}
	if !l.run([2]*app{}, start.Add(20*time.Second), func() bool { return f.Err() != nil }) {
		t.Fatal("no dead-peer detection")
	}
	if l.ep[leader].Err() != nil {
		t.Fatalf("the leader, which still hears keep-alives, broke: %v", l.ep[leader].Err())
	}
}

// With an RTT longer than the keep-alive interval both ends may answer each other's answers, but
// never more often than every 3/4 interval: at most 4/3 of the timer rate, no storm.
func TestKeepAliveLongRTTNoStorm(t *testing.T) {
	l := idlePair(t, 22, 700*time.Millisecond)
	sent0 := l.sent
	l.run([2]*app{}, l.now.Add(60*time.Second), func() bool { return false })
	for i, e := range l.ep {
		if e.Err() != nil {
			t.Fatalf("endpoint %d broke: %v", i, e.Err())
		}
		n := l.sent[i] - sent0[i]
		if n < 45 || n > 60*4/3+2 {
			t.Errorf("endpoint %d sent %d packets in 60 s idle at 1.4 s RTT", i, n)
		}
	}
	t.Logf("1.4 s RTT, 60 s idle: packets %v, answers %d/%d", [2]int{l.sent[0] - sent0[0], l.sent[1] - sent0[1]},
		l.ep[0].Stats().KeepAliveAnswers, l.ep[1].Stats().KeepAliveAnswers)
}

// A UDT4 peer sends a keep-alive about every 0.31 s while idle (spec §4.5). We answer about one
// in three, so we send about one packet per keep-alive interval and our timer never fires.
func TestKeepAliveUDT4Peer(t *testing.T) {
	now := time.Unix(1000, 0)
	e := New(Config{LocalID: 5, PeerID: 6, ISN: 1, PeerISN: 2, Start: now}, now)
	c := capture{e}
	ka := ctrlPkt(packet.TypeKeepAlive, 0, 5, 0)
	wakes := 0
	end := now.Add(60 * time.Second)
	for next := now.Add(310 * time.Millisecond); now.Before(end); {
		if tm := e.NextTimer(); tm.Before(next) {
			now = tm
			wakes++
			e.OnTimer(now)
			continue
		}
		now = next
		e.HandlePacket(now, ka)
		next = now.Add(310 * time.Millisecond)
	}
	sent := len(c.take())
	if e.Err() != nil || sent < 55 || sent > 70 || e.Stats().KeepAliveAnswers < uint64(sent)-2 {
		t.Fatalf("err %v, sent %d, answers %d, timer wakes %d", e.Err(), sent, e.Stats().KeepAliveAnswers, wakes)
	}
	t.Logf("UDT4-like peer: %d keep-alives sent in 60 s (%d answers), %d timer wakes", sent, e.Stats().KeepAliveAnswers, wakes)
}

// With timers armed lazily (only ever moved earlier: a postponed deadline still wakes the
// endpoint), an idle pair wakes about 1.5 times per keep-alive interval instead of twice.
func TestKeepAliveWakeupsLazyTimers(t *testing.T) {
	l := idlePair(t, 23, time.Millisecond)
	l.lazy = true
	l.wakes = [2]int{}
	sent0 := l.sent
	l.run([2]*app{}, l.now.Add(60*time.Second), func() bool { return false })
	w := l.wakes[0] + l.wakes[1]
	for i, e := range l.ep {
		if e.Err() != nil {
			t.Fatalf("endpoint %d broke: %v", i, e.Err())
		}
		if n := l.sent[i] - sent0[i]; n < 55 || n > 65 {
			t.Errorf("endpoint %d sent %d packets in 60 s idle", i, n)
		}
	}
	if w > 100 {
		t.Errorf("the pair woke %v times in 60 s idle with lazy timers, want ≈ 90", l.wakes)
	}
	t.Logf("lazy timers, 60 s idle: wakes %v, packets %v", l.wakes, [2]int{l.sent[0] - sent0[0], l.sent[1] - sent0[1]})
}

// With timers armed exactly, as conn arms them (pacer.Handle.Reschedule after every call), only
// the leading end's timer fires: an idle pair wakes once per keep-alive interval, with the same
// packets as above.
func TestKeepAliveWakeupsExactTimers(t *testing.T) {
	l := idlePair(t, 23, time.Millisecond)
	l.wakes = [2]int{}
	sent0 := l.sent
	const idle = 60 * time.Second
	l.run([2]*app{}, l.now.Add(idle), func() bool { return false })
	for i, e := range l.ep {
		if e.Err() != nil {
			t.Fatalf("endpoint %d broke: %v", i, e.Err())
		}
		if n := l.sent[i] - sent0[i]; n < 55 || n > 65 {
			t.Errorf("endpoint %d sent %d packets in 60 s idle", i, n)
		}
	}
	// One wake per interval, with 10 % for the phase settling at the start.
	if w, want := l.wakes[0]+l.wakes[1], int(idle/l.ep[0].kaInterval); w > want*11/10 {
		t.Errorf("the pair woke %v times in 60 s idle with exact timers, want ≈ %d", l.wakes, want)
	}
	t.Logf("exact timers, 60 s idle: wakes %v, packets %v", l.wakes, [2]int{l.sent[0] - sent0[0], l.sent[1] - sent0[1]})
}

// An idle endpoint's keep-alive deadline sits on the SYN grid of the wall clock, at most SYN
// after the interval T, so the idle connections of a process wake together: 50 endpoints started
// at scattered times within one SYN wake at one or two instants per interval, not 50.
func TestKeepAliveAlignedToSYN(t *testing.T) {
	base := time.Unix(1000, 100_000) // the starts span [0.1, 9.95) ms past a grid point
	wakes := map[int64]bool{}
	for k := range 50 {
		now := base.Add(time.Duration(k) * 197 * time.Microsecond) // scattered over 9.85 ms
		e := New(Config{LocalID: 5, PeerID: 6, ISN: 1, PeerISN: 2, Start: now}, now)
		c := capture{e}
		for range 5 {
			tm := e.NextTimer()
			if tm.UnixNano()%int64(SYN) != 0 {
				t.Fatalf("endpoint %d: timer at %v, not on the %v grid", k, tm, SYN)
			}
			due := e.at(e.keepAliveDue())
			if tm.Before(due) || tm.Sub(due) >= SYN {
				t.Fatalf("endpoint %d: timer at %v for a keep-alive due at %v", k, tm, due)
			}
			now = tm
			wakes[now.UnixNano()] = true
			e.OnTimer(now)
			e.HandlePacket(now, ctrlPkt(packet.TypeKeepAlive, 0, 5, 0)) // the peer's answer keeps it alive
			if len(c.take()) == 0 {
				t.Fatalf("endpoint %d: no keep-alive at %v", k, now)
			}
		}
	}
	// Each interval's 50 deadlines fall within one SYN: one grid point, or two when they
	// straddle one (without the alignment: 250 instants).
	if len(wakes) > 5*2 {
		t.Fatalf("%d distinct wake-up instants", len(wakes))
	}
	t.Logf("50 endpoints, 5 keep-alives each: %d distinct wake-up instants", len(wakes))
}
