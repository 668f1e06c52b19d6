package stream

import (
	"errors"
	"testing"
	"time"
)

// deadPathRun moves data from endpoint 0 to 1 over a 20 ms RTT path at a fixed 96 Mbit/s, kills
// both directions once dieAfter has passed and, if revive > 0, brings them back revive later.
// It records the send time of every datagram endpoint 0 puts on the wire after the path died.
type deadPathRun struct {
	l          *link
	diedAt     time.Time
	flightDead int // packets in flight when the path died
	flightBack int // … when it came back
	sentAfter  []time.Time
	dataAfter  int
}

// checkFlight asserts the bound: into the dead path at most one flight (the packets in
// flight once the sender stopped sending new data: each sent once) + 50 packets (probes,
// keep-alives), where the old timer re-sent the whole flight at every expiry.
func (r *deadPathRun) checkFlight(t *testing.T, flight int) {
	t.Helper()
	if limit := flight + 50; len(r.sentAfter) > limit {
		t.Errorf("%d packets into the dead path, want ≤ one flight (%d) + 50", len(r.sentAfter), flight)
	}
}

func newDeadPathRun(t *testing.T, dieAfter, revive time.Duration) *deadPathRun {
	t.Helper()
	r := &deadPathRun{}
	start := time.Unix(1_700_000_000, 0)
	dead := func() bool {
		if r.diedAt.IsZero() {
			return false
		}
		return revive <= 0 || r.l.now.Before(r.diedAt.Add(revive))
	}
	fwd := linkRules{delay: 10 * time.Millisecond, drop: func(b []byte) bool {
		if !dead() {
			return false
		}
		r.sentAfter = append(r.sentAfter, r.l.now)
		if b[0]&0x80 == 0 {
			r.dataAfter++
		}
		return true
	}}
	rev := linkRules{delay: 10 * time.Millisecond, drop: func([]byte) bool { return dead() }}
	r.l = newLink(40, fwd, rev)
	r.l.inject = func(i int, now time.Time) {
		if r.diedAt.IsZero() && now.Sub(start) >= dieAfter {
			r.diedAt = now
			r.flightDead = r.l.ep[0].Stats().FlightSize
		}
		if revive > 0 && r.flightBack == 0 && !r.diedAt.IsZero() && !now.Before(r.diedAt.Add(revive)) {
			r.flightBack = r.l.ep[0].Stats().FlightSize
		}
	}
	return r
}

// A path that dies with a flight of data in it: the sender probes with at most two packets per
// expiry of a timer that doubles each time (RFC 6298 §5.5), not the whole flight per expiry, and
// declares the peer dead after IdleTimeout as before.
func TestDeadPathProbesBackOff(t *testing.T) {
	r := newDeadPathRun(t, 300*time.Millisecond, 0)
	newPair(r.l, pairOpts{isnA: 1<<31 - 50, isnB: 3, ccA: fixedRate(), ccB: fixedRate(), idle: 10 * time.Second})
	a := &app{src: randomBytes(3, 64<<20), rbuf: make([]byte, 64<<10)}
	b := &app{rbuf: make([]byte, 64<<10)}
	r.l.run([2]*app{a, b}, r.l.now.Add(time.Minute), func() bool { return r.l.ep[0].Err() != nil })
	err := r.l.ep[0].Err()
	var idle *PeerIdleError
	if !errors.As(err, &idle) {
		t.Fatalf("sender error %v, want a *PeerIdleError", err)
	}
	took := r.l.now.Sub(r.diedAt)
	s := r.l.ep[0].Stats()
	// Probe times: the data packets after the flight left, grouped by expiry.
	var expiries []time.Time
	for _, at := range r.sentAfter {
		if len(expiries) == 0 || at.Sub(expiries[len(expiries)-1]) > time.Millisecond {
			expiries = append(expiries, at)
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(expiries); i++ {
		gaps = append(gaps, expiries[i].Sub(expiries[i-1]).Round(time.Millisecond))
	}
	t.Logf("flight %d when the path died, %d when the sender stopped; %d packets sent after the path died (%d data, %d of them retransmissions) until the peer was declared dead after %v; probes %d, timeouts %d; send times apart: %v",
		r.flightDead, s.FlightSize, len(r.sentAfter), r.dataAfter, s.PktRetrans, took.Round(time.Millisecond), s.Probes, s.Timeouts, gaps)
	if took < 10*time.Second || took > 11*time.Second {
		t.Errorf("peer declared dead %v after the path died, want IdleTimeout (10 s)", took)
	}
	r.checkFlight(t, s.FlightSize)
	// Each retransmission timeout waits twice the one before (keep-alives, once a second, may
	// fall in between and are not timer expiries: only gaps of 1.5 s and more are checked).
	for i := 1; i < len(gaps); i++ {
		if gaps[i] >= 1500*time.Millisecond && gaps[i-1] >= 300*time.Millisecond && gaps[i] < gaps[i-1]*3/2 {
			t.Errorf("expiry gaps %v: want each timeout interval doubled", gaps)
			break
		}
	}
	if s.GoBackN != 0 {
		t.Errorf("go-back-N %d times with no answer from the peer", s.GoBackN)
	}
}

// The path goes silent for 3 s and comes back: the sender sends only probes meanwhile, resends
// the flight once (go-back-N) when the peer answers, and the transfer completes intact.
func TestOutageThenRecovery(t *testing.T) {
	r := newDeadPathRun(t, 300*time.Millisecond, 3*time.Second)
	newPair(r.l, pairOpts{isnA: 1<<31 - 50, isnB: 3, ccA: fixedRate(), ccB: fixedRate(), idle: 10 * time.Second})
	transfer(t, r.l, 12<<20, false, time.Minute)
	s := r.l.ep[0].Stats()
	t.Logf("flight %d when the path died, %d when it came back; %d packets during the 3 s outage; probes %d, timeouts %d, go-back-N %d",
		r.flightDead, r.flightBack, len(r.sentAfter), s.Probes, s.Timeouts, s.GoBackN)
	r.checkFlight(t, r.flightBack)
	if s.Timeouts == 0 || s.GoBackN == 0 || s.GoBackN > s.Timeouts {
		t.Errorf("timeouts %d, go-back-N %d: want go-back-N after the outage, at most once per timeout", s.Timeouts, s.GoBackN)
	}
}

// rtoInterval: the tail-loss probe, then RTO·2^(n−2) up to 60 s (RFC 6298 §5.5, §2.5).
func TestRTOIntervalBackoff(t *testing.T) {
	l := newLink(1, linkRules{}, linkRules{})
	newPair(l, pairOpts{})
	e := l.ep[0]
	e.rttSample(20 * time.Millisecond) // RTT 20 ms, RTTVar 10 ms: RTT + 4·RTTVar + SYN = 70 ms
	want := []time.Duration{70 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	for n, w := range want {
		e.rtoCount = n
		if got := e.rtoInterval(); got != w {
			t.Errorf("expiry %d: interval %v, want %v", n+1, got, w)
		}
	}
	e.rtoCount = 40
	if got := e.rtoInterval(); got != maxRTO {
		t.Errorf("after 40 expiries: %v, want the cap %v", got, maxRTO)
	}
}
