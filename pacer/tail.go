package pacer

// lateTail estimates a high quantile of a waiter's recent wake-up lateness (oversleep, ns): the
// last tailWindow samples are kept in a ring and counted in the log-linear buckets of Stats'
// histogram (8 per power of two, so a quantile is read to about ±6 %), which makes a sample O(1)
// to add and a quantile one walk down from the top bucket, with no sort and no allocation.
//
// Hybrid reads its margin from it (see Hybrid): tailQuantile of the window, the wake-up tail
// that a tolerance must absorb or a spin must cover. A window rather than all history, because a
// VM's tail moves with the load of its neighbours; tailWindow/(1−tailQuantile) = 5 samples lie
// above the quantile, so one or two vCPU preemptions of several ms cannot hold the margin up.
type lateTail struct {
	ring   [tailWindow]uint8 // bucket index of each sample, oldest at next
	next   int
	counts [tailBuckets]uint16 // samples per bucket; they sum to tailWindow
}

const (
	// tailWindow is how many of the latest sleeps the quantile is taken over.
	tailWindow = 512
	// tailQuantile is the share of waits whose lateness the margin covers: the p99 at which
	// the pacer's precision targets are stated (a departure within its tolerance at p99).
	tailQuantile = 0.99
	// tailBuckets covers lateness up to 2^24 ns (16.8 ms); longer samples count in the top
	// bucket, which is far above any margin (hybridMaxMargin).
	tailBuckets = histSub + (24-histSubBits)*histSub
)

// reset fills the window with samples of v ns.
func (t *lateTail) reset(v int64) {
	i := tailIndex(v)
	for k := range t.ring {
		t.ring[k] = i
	}
	t.counts = [tailBuckets]uint16{}
	t.counts[i] = tailWindow
	t.next = 0
}

// record replaces the oldest sample with v ns (negative counts as 0).
func (t *lateTail) record(v int64) {
	i := tailIndex(v)
	t.counts[t.ring[t.next]]--
	t.counts[i]++
	t.ring[t.next] = i
	t.next = (t.next + 1) % tailWindow
}

// capAt lowers every sample above v ns to v.
func (t *lateTail) capAt(v int64) {
	c := tailIndex(v)
	for k, i := range t.ring {
		if i > c {
			t.counts[i]--
			t.counts[c]++
			t.ring[k] = c
		}
	}
}

// quantile returns the upper edge, in ns, of the bucket that holds the q-quantile of the
// window (0 < q < 1): an estimate that errs high by at most one bucket (≤ 12.5 %), so a margin
// read from it covers the quantile.
func (t *lateTail) quantile(q float64) int64 {
	above := int(float64(tailWindow) * (1 - q)) // samples allowed above the quantile
	seen := 0
	for i := tailBuckets - 1; i > 0; i-- {
		seen += int(t.counts[i])
		if seen > above {
			low, width := histBounds(i)
			return int64(low + width - 1)
		}
	}
	return 0
}

func tailIndex(v int64) uint8 {
	if v <= 0 {
		return 0
	}
	return uint8(min(histIndex(uint64(v)), tailBuckets-1))
}
