package pacer_test

import (
	"testing"
	"time"

	"github.com/udtgo/udt/internal/cputime"
	"github.com/udtgo/udt/pacer"
)

// BenchmarkScheduler measures the per-packet decision: one Release and one Next per packet, on
// time, for 1472-byte packets at 1 Gbit/s (11 776 ns apart) and 700 Mbit/s (16 822.857… ns, a
// fractional interval). cpu-ns/op is the process CPU time per decision (steadier than ns/op on a
// shared machine).
func BenchmarkScheduler(b *testing.B) {
	for _, bc := range []struct {
		name   string
		strict bool
		rate   int64 // bytes/s
	}{
		{"catch-up/1Gbit", false, 1e9 / 8},
		{"catch-up/700Mbit", false, 700e6 / 8}, // fractional interval
		{"strict/1Gbit", true, 1e9 / 8},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := pacer.NewScheduler(pacer.SchedulerConfig{Strict: bc.strict})
			s.SetRate(bc.rate, 1472)
			now := time.Now() // monotonic, like the pacer's clock
			b.ReportAllocs()
			sent := 0
			cpu := cputime.Process()
			for b.Loop() {
				sent += s.Release(now, 1)
				now = s.Next()
			}
			b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
			if sent != b.N {
				b.Fatalf("sent %d of %d", sent, b.N)
			}
		})
	}
	// Half the decisions find nothing due (a waiter that wakes early).
	b.Run("catch-up/not-due", func(b *testing.B) {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * time.Microsecond})
		now := time.Now() // monotonic, like the pacer's clock
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			if s.Release(now, 1) == 0 {
				now = s.Next()
			}
		}
		b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
	})
}
