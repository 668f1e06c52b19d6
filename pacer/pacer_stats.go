package pacer

import (
	"math/bits"
	"time"
)

// Stats are a Pacer's cumulative statistics since New.
type Stats struct {
	Wakes      uint64 // returns from Waiter.Wait
	Woken      uint64 // of Wakes, those ended early by Wake (an earlier Schedule, Close)
	IdleBlocks uint64 // Waits with no deadline because no flow was scheduled (zero CPU until Wake)
	Releases   uint64 // Flow.Release calls
	Packets    uint64 // packets released: the sum of the sent counts Release returned
	Stalls     uint64 // Release calls that sent nothing but asked to run again at once (deferred by StallDelay)

	// Lateness is, per Release call, the actual call time minus the scheduled departure time,
	// in µs (Schedule calls with a zero time are not counted; a call made early, within the
	// tolerance, counts as 0).
	Lateness Distribution

	// PacketsPerWake is, per wake that called a flow's Release, the packets released before the
	// next Wait, in packets; 0 when the Releases sent nothing (a flow held back by its window
	// asks to run and then finds nothing it may send), which lowers Mean and Min.
	PacketsPerWake Distribution
}

// Distribution summarizes samples kept in a fixed log-linear histogram (8 buckets per power of
// two: quantiles are accurate to about ±6 %, small integers exactly). Mean, Min and Max are
// exact. The unit is that of the field holding it. All are zero when Count is zero.
type Distribution struct {
	Count               uint64
	Mean, Min, Max      float64
	P50, P90, P99, P999 float64
}

// stats is the pacer's internal accounting; guarded by Pacer.mu. Recording allocates nothing.
type stats struct {
	wakes, woken, idleBlocks, releases, packets, stalls uint64
	late, perWake                                       histogram // ns, packets
}

func (s *stats) wake(early bool) {
	s.wakes++
	if early {
		s.woken++
	}
}

func (s *stats) release(sent uint64, scheduled, now time.Time) {
	s.releases++
	s.packets += sent
	if !scheduled.IsZero() {
		late := now.Sub(scheduled)
		if late < 0 {
			late = 0
		}
		s.late.record(uint64(late))
	}
}

func (s *stats) snapshot() Stats {
	return Stats{
		Wakes: s.wakes, Woken: s.woken, IdleBlocks: s.idleBlocks,
		Releases: s.releases, Packets: s.packets, Stalls: s.stalls,
		Lateness:       s.late.distribution(1e-3),
		PacketsPerWake: s.perWake.distribution(1),
	}
}

// histogram counts uint64 samples in log-linear buckets: values below 8 have their own bucket;
// above, each power of two [2^e, 2^(e+1)) is split into 8 equal buckets.
type histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64
	min, max uint64
}

const (
	histSubBits = 3
	histSub     = 1 << histSubBits
	histBuckets = histSub + (64-histSubBits)*histSub
)

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // ≥ histSubBits
	m := (v >> (e - histSubBits)) & (histSub - 1)
	return histSub + (e-histSubBits)*histSub + int(m)
}

// histBounds returns the lowest value of bucket i and its width.
func histBounds(i int) (low, width uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	e := (i-histSub)/histSub + histSubBits
	m := uint64((i - histSub) % histSub)
	shift := uint(e - histSubBits)
	return (histSub | m) << shift, 1 << shift
}

func (h *histogram) record(v uint64) {
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// quantile returns the q-quantile (0 ≤ q ≤ 1) as the midpoint of the bucket holding it,
// clamped to the exact min and max.
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1 // 1-based rank of the sample
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		low, width := histBounds(i)
		v := float64(low) + float64(width-1)/2
		return min(max(v, float64(h.min)), float64(h.max))
	}
	return float64(h.max)
}

func (h *histogram) distribution(scale float64) Distribution {
	if h.n == 0 {
		return Distribution{}
	}
	return Distribution{
		Count: h.n,
		Mean:  h.sum / float64(h.n) * scale,
		Min:   float64(h.min) * scale,
		Max:   float64(h.max) * scale,
		P50:   h.quantile(0.5) * scale,
		P90:   h.quantile(0.9) * scale,
		P99:   h.quantile(0.99) * scale,
		P999:  h.quantile(0.999) * scale,
	}
}
