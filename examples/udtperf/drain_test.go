package main

import (
	"math"
	"testing"
	"time"
)

// drainLink is a simulated path behind a send buffer, stepped in virtual milliseconds: the
// wire carries up to rate(t) bytes/s of the data written, and ACKs, every 10 ms, free what the
// wire had delivered one rtt earlier.
type drainLink struct {
	rate func(t time.Duration) float64 // bytes/s the wire can carry at t
	rtt  time.Duration
	buf  int64 // send buffer, bytes
}

// drainRun is the outcome of a timed run over a drainLink.
type drainRun struct {
	end       time.Duration // the last byte acknowledged: the run is over
	lastWrite time.Duration // the sender's last write
	bytes     int64         // bytes sent (all delivered by end)
	capacity  float64       // bytes the wire could have carried in [0, end)
}

// run sends for dur as sendFrames does: frames while the estimate and the buffer allow,
// waiting otherwise, never after dur.
func (l drainLink) run(t *testing.T, dur time.Duration) drainRun {
	t.Helper()
	var (
		d            drainEstimate
		sent, acked  int64
		delivered    float64
		deliveredLog []float64 // delivered at the end of each millisecond
		r            drainRun
	)
	rttMs := int(l.rtt / time.Millisecond)
	for ms := 0; ms < 100_000; ms++ {
		now := time.Duration(ms) * time.Millisecond
		if now < dur {
			for !d.full(sent, sent-acked, now, dur) && sent-acked+frameSize <= l.buf {
				sent += frameSize
				r.lastWrite = now
			}
		} else if acked == sent {
			r.end, r.bytes = now, sent
			return r
		}
		c := l.rate(now) / 1000
		r.capacity += c
		delivered = math.Min(delivered+c, float64(sent))
		deliveredLog = append(deliveredLog, delivered)
		if k := ms - rttMs; ms%10 == 0 && k >= 0 {
			acked = int64(deliveredLog[k])
		}
	}
	t.Fatalf("the run did not end in 100 s")
	return r
}

// udtBuf is udt's default send buffer with the default MSS.
const udtBuf = 8192 * 1456

func mbit(m float64) float64 { return m * 1e6 / 8 }

func steady(bps float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return bps }
}

// check asserts that the run ended within max(10 %, 0.5 s) of dur and used at least 90 % of
// the wire's capacity until then.
func (r drainRun) check(t *testing.T, dur time.Duration) {
	t.Helper()
	t.Logf("ended at %v (-time %v), last write at %v, %d bytes, %.1f %% of the capacity",
		r.end, dur, r.lastWrite, r.bytes, 100*float64(r.bytes)/r.capacity)
	if slack := max(dur/10, 500*time.Millisecond); r.end < dur-slack || r.end > dur+slack {
		t.Errorf("ended at %v, want %v ± %v", r.end, dur, slack)
	}
	if u := float64(r.bytes) / r.capacity; u < 0.9 {
		t.Errorf("used %.1f %% of the capacity, want ≥ 90 %%", 100*u)
	}
}

func TestDrainSteadyEndsNearTime(t *testing.T) {
	for _, c := range []struct {
		name string
		link drainLink
		dur  time.Duration
	}{
		{"wan 100mbit 100ms", drainLink{steady(mbit(100)), 100 * time.Millisecond, udtBuf}, 10 * time.Second},
		{"loopback 1gbit", drainLink{steady(mbit(1000)), time.Millisecond, udtBuf}, 2 * time.Second},
		{"loopback 10mbit", drainLink{steady(mbit(10)), time.Millisecond, udtBuf}, 2 * time.Second},
		{"loopback 10mbit 1s", drainLink{steady(mbit(10)), time.Millisecond, udtBuf}, time.Second},
		{"loopback 2mbit", drainLink{steady(mbit(2)), time.Millisecond, udtBuf}, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) { c.link.run(t, c.dur).check(t, c.dur) })
	}
}

func TestDrainDipDoesNotEndRun(t *testing.T) {
	const dur = 10 * time.Second
	for _, c := range []struct {
		from time.Duration // the wire's dip; the ACKs show it one rtt (100 ms) later
		keep float64       // the share of the rate the wire keeps meanwhile
	}{
		{1900 * time.Millisecond, 0.02}, // the ACKs show 2 % over [2 s, 2.3 s)
		{2 * time.Second, 0.1},
		{2 * time.Second, 0},
	} {
		dip := func(now time.Duration) float64 {
			if now >= c.from && now < c.from+300*time.Millisecond {
				return c.keep * mbit(100)
			}
			return mbit(100)
		}
		r := drainLink{dip, 100 * time.Millisecond, udtBuf}.run(t, dur)
		r.check(t, dur)
		if r.lastWrite < dur/2 {
			t.Errorf("dip to %.0f %% from %v: the sender stopped writing at %v, before -time/2",
				100*c.keep, c.from, r.lastWrite)
		}
	}
}

func TestDrainRampAndLossyPath(t *testing.T) {
	const dur = 10 * time.Second
	ramp := func(now time.Duration) float64 { // slow start's ramp over 3 s
		return mbit(100) * min(1, max(0.01, now.Seconds()/3))
	}
	lossy := func(now time.Duration) float64 { // 300 ms stalls every second
		if now%time.Second >= 700*time.Millisecond {
			return 0
		}
		return mbit(100)
	}
	for name, rate := range map[string]func(time.Duration) float64{"ramp": ramp, "lossy": lossy} {
		t.Run(name, func(t *testing.T) { drainLink{rate, 100 * time.Millisecond, udtBuf}.run(t, dur).check(t, dur) })
	}
}

func TestDrainLateStart(t *testing.T) {
	const dur = 2 * time.Second
	late := func(now time.Duration) float64 { // the receiver reads nothing for 1 s
		if now < time.Second {
			return 0
		}
		return mbit(10)
	}
	drainLink{late, time.Millisecond, udtBuf}.run(t, dur).check(t, dur)
}

func TestDrainFirstBacklogBeforeRate(t *testing.T) {
	var d drainEstimate
	if d.full(drainFirst/2, drainFirst/2, 0, time.Second) {
		t.Errorf("waits below drainFirst before a rate is known")
	}
	if !d.full(drainFirst, drainFirst, 0, time.Second) {
		t.Errorf("writes past drainFirst before a rate is known")
	}
	if !d.full(drainFirst, drainFirst, 200*time.Millisecond, time.Second) {
		t.Errorf("nothing has left yet, but writes past drainFirst")
	}
}

func TestDrainWithoutBacklogNeverWaits(t *testing.T) {
	var d drainEstimate
	if d.wait(&fakeConn{}, 1<<40, time.Second, 2*time.Second) {
		t.Errorf("a transport without a visible backlog waits")
	}
	c := &backlogConn{queued: 1 << 30}
	if !d.wait(c, 1<<30, time.Second, 2*time.Second) {
		t.Errorf("1 GiB queued and nothing left: does not wait")
	}
}
