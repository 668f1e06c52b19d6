package udprelay

import "time"

// shaper is a direction's rate limit (Impairment.Rate): a serial link with a drop-tail queue,
// computed, not waited for: each datagram gets the time it finishes leaving the link, and the
// queue holds those not finished yet.
type shaper struct {
	busyUntil time.Time // when the last admitted datagram has left
	deps      []queued  // admitted datagrams not yet gone, in order
	head      int
	bytes     int // their bytes
}

type queued struct {
	dep  time.Time
	size int
}

// admit queues a datagram of size bytes arriving at now and returns when it has left the link,
// or false if the queue is full. Caller holds the direction's lock.
func (s *shaper) admit(now time.Time, size int, imp *Impairment) (time.Time, bool) {
	for s.head < len(s.deps) && !s.deps[s.head].dep.After(now) {
		s.bytes -= s.deps[s.head].size
		s.head++
	}
	if s.head == len(s.deps) {
		s.deps, s.head = s.deps[:0], 0
	} else if s.head > 1024 && s.head > len(s.deps)/2 {
		s.deps, s.head = append(s.deps[:0], s.deps[s.head:]...), 0
	}
	limit := imp.QueueBytes
	if limit <= 0 {
		limit = int(imp.Rate / 8 / 10) // 100 ms at the rate
	}
	if s.bytes+size > limit {
		return time.Time{}, false
	}
	start := now
	if s.busyUntil.After(start) {
		start = s.busyUntil
	}
	tx := time.Duration(int64(size+imp.Overhead) * 8 * int64(time.Second) / imp.Rate)
	s.busyUntil = start.Add(tx)
	s.deps = append(s.deps, queued{dep: s.busyUntil, size: size})
	s.bytes += size
	return s.busyUntil, true
}

// nextTick returns the first tick at or after t of a clock that ticks every period from epoch
// (the relay's start): when a coarse release (Impairment.ReleaseEvery) lets a datagram go that is
// ready at t. Ticks are computed on the monotonic clock from one epoch, so the datagrams of one
// release share exactly one time and the delay line keeps their order.
func nextTick(t, epoch time.Time, period time.Duration) time.Time {
	d := t.Sub(epoch)
	if d <= 0 {
		return t
	}
	return epoch.Add((d + period - 1) / period * period)
}
