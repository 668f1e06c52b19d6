package pacer_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/udtgo/udt/pacer"
)

// TestPacerConcurrentScheduleRemove hammers one pacer (real time, gotimer) from several
// goroutines with Schedule and Remove on shared flows, while the flows reschedule themselves
// from Release. It checks the contracts, not timing: at most one Release begun before its
// Remove returned may still run after it (Remove does not wait for it) and none once Removed is
// closed, at most one Release at a time, none after Close returned, and no goroutine left behind.
func TestPacerConcurrentScheduleRemove(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := pacer.New(pacer.NewGoTimer(), pacer.Config{Burst: 4})
	var (
		inRelease atomic.Int32
		closed    atomic.Bool
		bad       atomic.Value // string
	)
	type flow struct {
		h     *pacer.Handle
		gone  atomic.Bool  // set once Remove has returned
		after atomic.Int32 // Releases that began after gone was set
		dead  atomic.Bool  // set once Removed was closed
	}
	newFlow := func() *flow {
		f := &flow{}
		n := 0 // touched only by Release: never two at once
		f.h = p.Add(flowFunc(func(now time.Time, max int) (int, time.Time) {
			if inRelease.Add(1) != 1 {
				bad.Store("two Releases at once")
			}
			defer inRelease.Add(-1)
			if f.dead.Load() {
				bad.Store("Release after Removed was closed")
			}
			if f.gone.Load() && f.after.Add(1) > 1 {
				bad.Store("two Releases after Remove returned")
			}
			if closed.Load() {
				bad.Store("Release after Close returned")
			}
			n++
			switch n % 4 {
			case 0:
				f.h.Schedule(now.Add(time.Duration(n%50) * time.Microsecond))
				return 1, time.Time{}
			case 1:
				return min(max, 2), now.Add(20 * time.Microsecond)
			case 2:
				f.h.Remove() // from inside its own Release: this one is the last
				f.dead.Store(true)
				return 1, now
			}
			return 0, time.Time{}
		}))
		return f
	}
	const nFlows = 32
	var slots [nFlows]atomic.Pointer[flow]
	for i := range slots {
		slots[i].Store(newFlow())
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 3000 {
				if i%100 == 0 {
					time.Sleep(100 * time.Microsecond) // let deadlines pass
				}
				slot := &slots[rng.IntN(nFlows)]
				switch rng.IntN(20) {
				case 0: // replace the flow: Remove the old one, from outside
					old := slot.Swap(newFlow())
					old.h.Remove()
					old.gone.Store(true)
					if g == 0 { // one goroutine also waits for the Release in progress to end
						<-old.h.Removed()
						old.dead.Store(true)
					}
				default:
					slot.Load().h.Schedule(time.Now().Add(time.Duration(rng.IntN(200)) * time.Microsecond))
				}
			}
		}()
	}
	wg.Wait()
	p.Close()
	// Close returns at once when a Release is in progress (its documented exception, for a Close
	// from inside a Release); that Release may then still run its checks, so "after Close" is
	// measured from Done.
	<-p.Done()
	closed.Store(true)
	for i := range slots {
		slots[i].Load().h.Schedule(time.Now())
		slots[i].Load().h.Remove()
	}
	time.Sleep(time.Millisecond) // would let a (buggy) surviving goroutine call Release
	if s, _ := bad.Load().(string); s != "" {
		t.Fatal(s)
	}
	st := p.Stats()
	if st.Releases == 0 || st.Lateness.Count == 0 {
		t.Fatalf("nothing released: %+v", st)
	}
	t.Logf("releases %d, packets %d, wakes %d (woken %d), lateness p50 %.0f µs p99 %.0f µs max %.0f µs",
		st.Releases, st.Packets, st.Wakes, st.Woken, st.Lateness.P50, st.Lateness.P99, st.Lateness.Max)
}
