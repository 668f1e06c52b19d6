package conn

import (
	"io"
	"strconv"
	"testing"
	"time"
)

// BenchmarkMessagesLoopback is BenchmarkBulkLoopback in message mode: 64 KiB messages (b.N of
// them) over loopback, read one by one; compare its Mbit/s with the stream's in the same run.
// 1400 B messages measure the per-message cost; 4 MiB ones the copies in 256 KiB steps.
//
//	go test -run '^$' -bench 'BulkLoopback/hybrid|MessagesLoopback' -count 5 ./conn/
func BenchmarkMessagesLoopback(b *testing.B) {
	for _, size := range []int{64 << 10, 1400, 4 << 20} {
		b.Run(byteSize(size), func(b *testing.B) {
			cfg := &Config{Pacer: "hybrid", MessageMode: true}
			c, s, ln := loopbackPair(b, cfg)
			defer ln.Close()
			msg := make([]byte, size)
			done := make(chan int64)
			go func() {
				buf := make([]byte, size)
				var n int64
				for {
					k, err := s.ReadMessage(buf)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Error(err)
						break
					}
					n += int64(k)
				}
				done <- n
			}()
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := c.WriteMessage(msg, 0, true); err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
			n := <-done
			el := time.Since(start)
			b.StopTimer()
			s.Close()
			b.ReportMetric(float64(n)*8/el.Seconds()/1e6, "Mbit/s")
			b.ReportMetric(float64(n/int64(size))/el.Seconds(), "msgs/s")
		})
	}
}

func byteSize(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
