package simnet

import "time"

// nextTick returns the first multiple of period on the clock (counted in wall-clock nanoseconds
// since the Unix epoch, so every link of every Network ticks in phase) at or after t: the time a
// coarse-release stage (LinkConfig.ReleaseEvery) lets a packet go that reached it at t. The
// result keeps t's monotonic reading.
func nextTick(t time.Time, period time.Duration) time.Time {
	r := time.Duration(t.UnixNano() % int64(period))
	if r < 0 { // before 1970: % keeps the dividend's sign
		r += period
	}
	if r == 0 {
		return t
	}
	return t.Add(period - r)
}

// jitter returns the extra delay of a packet leaving the queue stage at dep: a uniform draw in
// [0, Jitter], per packet, or per JitterHold-long slot of the clock if JitterHold is set (one
// draw for the first packet of each slot that sees traffic). Caller holds net.mu.
func (l *Link) jitter(dep time.Time) time.Duration {
	c := &l.cfg
	if c.JitterHold <= 0 {
		return time.Duration(l.rng.Int64N(int64(c.Jitter) + 1))
	}
	slot := dep.UnixNano()/int64(c.JitterHold) + 1
	if slot != l.jitSlot || l.jitDraw > c.Jitter { // a new slot, or SetConfig narrowed the jitter
		l.jitSlot = slot
		l.jitDraw = time.Duration(l.rng.Int64N(int64(c.Jitter) + 1))
	}
	return l.jitDraw
}
