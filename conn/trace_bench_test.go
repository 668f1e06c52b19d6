package conn

import (
	"io"
	"testing"
	"time"

	"github.com/udtgo/udt/conn/trace"
)

// BenchmarkBulkLoopbackTraced is BenchmarkBulkLoopback (gotimer) with both ends traced into
// tracers that discard (every event, per packet too: the cost of building and queuing them)
// and, for comparison, untraced. Both must allocate nothing per 1 MiB written.
func BenchmarkBulkLoopbackTraced(b *testing.B) {
	for _, traced := range []bool{false, true} {
		name := "untraced"
		cfg := &Config{Pacer: "gotimer"}
		if traced {
			name = "traced"
			cfg.Tracer = func(trace.ConnInfo) trace.Tracer { return trace.Func(func(trace.Event) {}) }
		}
		b.Run(name, func(b *testing.B) {
			c, s, ln := loopbackPair(b, cfg)
			defer ln.Close()
			chunk := make([]byte, 1<<20)
			done := make(chan int64)
			go func() {
				n, _ := io.Copy(io.Discard, s)
				done <- n
			}()
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if _, err := c.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
			n := <-done
			el := time.Since(start)
			b.StopTimer()
			s.Close()
			b.ReportMetric(float64(n)*8/el.Seconds()/1e6, "Mbit/s")
		})
	}
}
