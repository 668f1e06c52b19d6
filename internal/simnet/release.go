package simnet

import "time"

// nextTick returns the first tick at or after t of a clock that ticks every period from epoch:
// the time a coarse-release stage (LinkConfig.ReleaseEvery) lets a packet go that reached it at
// t. Ticks are computed on the monotonic clock from one epoch, so the packets of one release
// leave at exactly the same time, in their order.
func nextTick(t, epoch time.Time, period time.Duration) time.Time {
	d := t.Sub(epoch)
	if d <= 0 {
		return t
	}
	return epoch.Add((d + period - 1) / period * period)
}

// jitter returns the extra delay of a packet leaving the queue stage at dep: a uniform draw in
// [0, Jitter], per packet, or per JitterHold-long slot of the clock (counted from the link's
// creation) if JitterHold is set: one draw for the first packet of each slot that sees traffic.
// Caller holds net.mu.
func (l *Link) jitter(dep time.Time) time.Duration {
	c := &l.cfg
	if c.JitterHold <= 0 {
		return time.Duration(l.rng.Int64N(int64(c.Jitter) + 1))
	}
	slot := int64(dep.Sub(l.epoch)/c.JitterHold) + 1
	if slot != l.jitSlot || l.jitDraw > c.Jitter { // a new slot, or SetConfig narrowed the jitter
		l.jitSlot = slot
		l.jitDraw = time.Duration(l.rng.Int64N(int64(c.Jitter) + 1))
	}
	return l.jitDraw
}
