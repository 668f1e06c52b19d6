package conn

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// loopbackPair returns a connected client and server over real UDP on 127.0.0.1.
func loopbackPair(tb testing.TB, cfg *Config) (client, server *Conn, ln *Listener) {
	tb.Helper()
	ln, err := Listen("udp", "127.0.0.1:0", cfg)
	if err != nil {
		tb.Fatal(err)
	}
	client, server = dialAccept(tb, ln, "udp", ln.Addr().String(), cfg)
	return client, server, ln
}

// dialAccept dials address (ln's, or a relay in front of it) and returns both ends; the test
// fails if either side fails. When the test ends it waits for both ends to be over.
func dialAccept(tb testing.TB, ln *Listener, network, address string, cfg *Config) (client, server *Conn) {
	tb.Helper()
	acc := make(chan *Conn, 1)
	go func() {
		c, _ := ln.AcceptUDT(context.Background())
		acc <- c
	}()
	client, err := Dial(network, address, cfg)
	if err != nil {
		ln.Close()
		tb.Fatal(err)
	}
	server = <-acc
	if server == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { closeWait(client, server) }) // Close returns before the connections end
	return client, server
}

// BenchmarkBulkLoopback measures one connection's bulk goodput over UDP loopback with the
// default pacer and no rate cap: b.N chunks of 1 MiB, reported as Mbit/s.
func BenchmarkBulkLoopback(b *testing.B) {
	for _, name := range []string{"hybrid", "gotimer"} {
		b.Run(name, func(b *testing.B) {
			c, s, ln := loopbackPair(b, &Config{Pacer: name})
			defer ln.Close()
			chunk := make([]byte, 1<<20)
			done := make(chan int64)
			go func() {
				n, _ := io.Copy(io.Discard, s)
				done <- n
			}()
			b.SetBytes(int64(len(chunk)))
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
			st := c.Stats()
			b.ReportMetric(float64(n)*8/el.Seconds()/1e6, "Mbit/s")
			b.ReportMetric(100*float64(st.PktRetrans)/float64(max(st.PktSent, 1)), "retrans%")
		})
	}
}

// BenchmarkDial measures connection setup on loopback (4 handshake packets, spec §3.2).
func BenchmarkDial(b *testing.B) {
	ln, err := Listen("udp", "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) { io.Copy(io.Discard, c); c.Close() }(c)
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		c, err := Dial("udp", ln.Addr().String(), nil)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		c.CloseContext(context.Background()) // over before the next Dial: Close returns before that
		b.StartTimer()
	}
	reportQuantiles(b, lat, "dial")
}
