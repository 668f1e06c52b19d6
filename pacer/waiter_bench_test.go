package pacer

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/cputime"
)

// BenchmarkWait measures each backend's lateness past the deadline and its CPU cost, for the
// waits pacerbench uses: e.g. BenchmarkWait/hybrid/100us reports late-p50-us, late-p99-us and
// cpu-us/wait (process CPU from getrusage divided by waits). hybrid-tolerant is Hybrid's
// WaitTolerant with DefaultTolerance: how much of the CPU the tolerance saves, and at what
// lateness (the pacer's release window spends the early side).
func BenchmarkWait(b *testing.B) {
	for _, name := range append(WaiterNames(), "hybrid-tolerant") {
		b.Run(name, func(b *testing.B) {
			tol := time.Duration(0)
			if name == "hybrid-tolerant" {
				name, tol = "hybrid", DefaultTolerance
			}
			w, err := NewWaiter(name)
			if errors.Is(err, errors.ErrUnsupported) {
				b.Skip(err)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer closeWaiter(w)
			wait := w.Wait
			if tw, ok := w.(TolerantWaiter); ok && tol > 0 {
				wait = func(d time.Time) bool { return tw.WaitTolerant(d, tol) }
			}
			for _, d := range []time.Duration{10 * time.Microsecond, 50 * time.Microsecond,
				100 * time.Microsecond, 500 * time.Microsecond, 800 * time.Microsecond} {
				b.Run(fmt.Sprintf("%dus", d/time.Microsecond), func(b *testing.B) {
					late := make([]time.Duration, 0, 1024)
					cpu0 := cputime.Process()
					for b.Loop() {
						deadline := time.Now().Add(d)
						wait(deadline)
						late = append(late, time.Since(deadline))
					}
					cpu := cputime.Process() - cpu0
					slices.Sort(late)
					n := len(late)
					b.ReportMetric(float64(late[n/2])/1e3, "late-p50-us")
					b.ReportMetric(float64(late[min(n-1, n*99/100)])/1e3, "late-p99-us")
					b.ReportMetric(float64(cpu)/1e3/float64(n), "cpu-us/wait")
				})
			}
		})
	}
}
