package conn

import (
	"context"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/cputime"
)

// BenchmarkIdleConnections measures the CPU that 1000 established, idle connections cost on
// loopback (keep-alives and timers only), as a percentage of one core. Both ends run in this
// process, each on one UDP socket (the clients dial from a second Listener's socket), so the
// figure covers 1000 connections at each end; "%core-per-end" halves it. Each iteration idles 2 s.
func BenchmarkIdleConnections(b *testing.B) {
	const n = 1000
	ln, err := Listen("udp", "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	from, err := Listen("udp", "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer from.Close()
	var conns []*Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	accepted := make(chan *Conn, n)
	go func() {
		for {
			c, err := ln.AcceptUDT(context.Background())
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		for range len(conns) {
			(<-accepted).Close()
		}
	}()
	for range n {
		c, err := from.DialContext(context.Background(), "udp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	time.Sleep(time.Second) // let the handshakes' ACK timers settle
	b.ResetTimer()
	var cpu, wall time.Duration
	for range b.N {
		c0, w0 := cputime.Process(), time.Now()
		time.Sleep(2 * time.Second)
		cpu += cputime.Process() - c0
		wall += time.Since(w0)
	}
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
	b.ReportMetric(50*cpu.Seconds()/wall.Seconds(), "%core-per-end")
}
