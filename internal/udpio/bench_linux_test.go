package udpio

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's user+system CPU time; lock the goroutine to its thread.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report adds Mbit/s (payload) and µs of the measuring thread's CPU per datagram.
func report(b *testing.B, datagrams, bytes int, wall, cpu time.Duration) {
	b.ReportMetric(float64(bytes)*8/wall.Seconds()/1e6, "Mbit/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(datagrams), "cpu-µs/dgram")
}

// BenchmarkWriteBatch sends batches of 32 × 1472-byte datagrams through each send path to a plain
// receiver (one ReadFromUDPAddrPort per datagram on another goroutine) on IPv4 loopback. The CPU
// figure is the sending thread's, which on loopback includes the kernel's delivery to the
// receiving socket.
func BenchmarkWriteBatch(b *testing.B) {
	for _, sm := range sendModes {
		b.Run(sm.name, func(b *testing.B) {
			su := listen(b, "udp4", "127.0.0.1:0")
			ru := listen(b, "udp4", "127.0.0.1:0")
			ru.SetReadBuffer(4 << 20)
			var wg sync.WaitGroup
			wg.Go(func() { // plain receiver, ends when ru closes
				buf := make([]byte, 2048)
				for {
					if _, _, err := ru.ReadFromUDPAddrPort(buf); err != nil {
						return
					}
				}
			})
			defer wg.Wait()
			defer ru.Close()
			s := newConn(su, sm.opt)
			to := addrOf(ru, "127.0.0.1")
			bufs := contiguous(32, 1472, 1472, 1)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, t0 := threadCPU(b), time.Now()
			b.ResetTimer()
			for b.Loop() {
				if n, err := s.WriteBatch(bufs, to); n != len(bufs) || err != nil {
					b.Fatalf("WriteBatch = %d, %v", n, err)
				}
			}
			b.StopTimer()
			report(b, b.N*32, b.N*32*1472, time.Since(t0), threadCPU(b)-cpu0)
		})
	}
}

// BenchmarkReadBatch reads 1472-byte datagrams through each receive path with 64 Messages per
// call, while another goroutine sends GSO batches of 32 as fast as it can (the receiver drops
// what it cannot take). Mbit/s is what the reader got; the CPU figure is the reading thread's.
func BenchmarkReadBatch(b *testing.B) {
	for _, rm := range recvModes {
		b.Run(rm.name, func(b *testing.B) {
			su := listen(b, "udp4", "127.0.0.1:0")
			ru := listen(b, "udp4", "127.0.0.1:0")
			ru.SetReadBuffer(4 << 20)
			s, r := New(su), newConn(ru, rm.opt)
			to := addrOf(ru, "127.0.0.1")
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				bufs := contiguous(32, 1472, 1472, 1)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.WriteBatch(bufs, to); err != nil {
						return
					}
				}
			})
			defer wg.Wait()
			defer close(stop)
			msgs := newMsgs(64, 1500)
			ru.SetReadDeadline(time.Now().Add(30 * time.Second)) // bounds a stalled run
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			got, bytes := 0, 0
			cpu0, t0 := threadCPU(b), time.Now()
			b.ResetTimer()
			for b.Loop() {
				n, err := r.ReadBatch(msgs)
				if err != nil {
					b.Fatal(err)
				}
				got += n
				for _, m := range msgs[:n] {
					bytes += m.N
				}
			}
			b.StopTimer()
			report(b, got, bytes, time.Since(t0), threadCPU(b)-cpu0)
			b.ReportMetric(float64(got)/float64(b.N), "dgrams/call")
		})
	}
}

// BenchmarkMaxDatagram is the cost of reading the kernel's path MTU to a destination (a probe
// socket, connect, getsockopt, close): paid once per connection at its start.
func BenchmarkMaxDatagram(b *testing.B) {
	uc := listen(b, "udp4", "127.0.0.1:0")
	c := New(uc)
	to := addrOf(uc, "127.0.0.1")
	for b.Loop() {
		if c.MaxDatagram(to) == 0 {
			b.Fatal("unknown")
		}
	}
}
