package conn

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/cputime"
)

// BenchmarkManyConnections measures what one busy connection does to the others on its socket:
// one Listener on UDP loopback serves 1000 connections, one of which bulk-sends as fast as it can
// while each of the other 999 sends a 100-byte request once a second (random phase) and waits for
// the 100-byte echo: about 1000 exchanges per second in all, a light load (a keep-alive-like
// RPC per connection), so that the figures show what the bulk transfer does to the others rather
// than the CPU limit of a 2-vCPU machine running both ends. It reports the exchanges' round-trip
// latency (p50, p99, max in µs, from Write to the end of the answer's Read, and the p50 and p99
// of its two legs: "request" until the server's Read returned it, "answer" from then on), their
// rate, the bulk connection's goodput, and the process's CPU. The 999 clients share one socket
// (a second Listener's, as in BenchmarkIdleConnections); the bulk client has its own. Each
// iteration measures one round of 1 s; use -benchtime 10x or more.
//
// Variants: "bulk" with the default Config, and "idle-bulk" with the bulk connection open but
// silent (the exchanges alone). Each variant waits until all its connections are over, so that
// the next one starts clean.
func BenchmarkManyConnections(b *testing.B) {
	b.Run("bulk", func(b *testing.B) { benchManyConnections(b, true) })
	b.Run("idle-bulk", func(b *testing.B) { benchManyConnections(b, false) })
}

func benchManyConnections(b *testing.B, withBulk bool) {
	const (
		n      = 1000
		msg    = 100
		period = time.Second
	)
	epoch := time.Now()
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

	// Server: the first byte says what the connection is: 'B' bulk (discarded) or 'E' echo.
	var served sync.WaitGroup
	var bulkRead int64
	var bulkMu sync.Mutex
	serve := func(c *Conn) {
		defer served.Done()
		defer c.Close()
		buf := make([]byte, 64<<10)
		if _, err := io.ReadFull(c, buf[:1]); err != nil {
			return
		}
		if buf[0] == 'B' {
			for {
				k, err := c.Read(buf)
				bulkMu.Lock()
				bulkRead += int64(k)
				bulkMu.Unlock()
				if err != nil {
					return
				}
			}
		}
		for {
			if _, err := io.ReadFull(c, buf[:msg]); err != nil {
				return
			}
			// When the request was read, for the split of the round trip into its two legs
			// (one process, so one monotonic clock).
			binary.LittleEndian.PutUint64(buf[:8], uint64(time.Since(epoch)))
			if _, err := c.Write(buf[:msg]); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.AcceptUDT(context.Background())
			if err != nil {
				return
			}
			served.Add(1)
			go serve(c)
		}
	}()
	defer served.Wait()

	clients := make([]*Conn, 0, n-1)
	defer func() { closeWait(clients...) }() // over before the next run starts
	for range n - 1 {
		c, err := from.DialContext(context.Background(), "udp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write([]byte{'E'}); err != nil {
			b.Fatal(err)
		}
		clients = append(clients, c)
	}
	bulk, err := Dial("udp", ln.Addr().String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bulk.CloseContext(context.Background())
	if _, err := bulk.Write([]byte{'B'}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the bulk sender
		defer wg.Done()
		if !withBulk {
			return
		}
		chunk := make([]byte, 1<<20)
		for {
			select {
			case <-stop:
				return
			default:
			}
			bulk.SetWriteDeadline(time.Now().Add(period))
			if _, err := bulk.Write(chunk); err != nil && !isTimeout(err) {
				return
			}
		}
	}()
	time.Sleep(time.Second) // the bulk transfer reaches its rate; the handshakes' timers settle

	type sample struct {
		at       time.Time
		rtt      time.Duration
		req, ans time.Duration // the legs: until the server read the request, and from then on
	}
	perClient := make([][]sample, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			req, resp := make([]byte, msg), make([]byte, msg)
			t := time.NewTimer(time.Duration(rng.Int64N(int64(period))))
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				t.Reset(period)
				start := time.Now()
				if _, err := c.Write(req); err != nil {
					return
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					return
				}
				rtt := time.Since(start)
				read := epoch.Add(time.Duration(binary.LittleEndian.Uint64(resp[:8])))
				req := read.Sub(start)
				perClient[i] = append(perClient[i], sample{start, rtt, req, rtt - req})
			}
		}()
	}
	time.Sleep(period) // every client is in its cycle
	b.ResetTimer()
	bulkMu.Lock()
	bulk0 := bulkRead
	bulkMu.Unlock()
	start, cpu0 := time.Now(), cputime.Process()
	time.Sleep(time.Duration(b.N) * period)
	el, cpu := time.Since(start), cputime.Process()-cpu0
	bulkMu.Lock()
	bulkBytes := bulkRead - bulk0
	bulkMu.Unlock()
	b.StopTimer()
	close(stop)
	bulk.Close()
	wg.Wait()

	var lat, reqs, answers []time.Duration
	for _, samples := range perClient { // complete: every client goroutine has ended
		for _, s := range samples {
			if !s.at.Before(start) && s.at.Before(start.Add(el)) {
				lat = append(lat, s.rtt)
				reqs = append(reqs, s.req)
				answers = append(answers, s.ans)
			}
		}
	}
	if want := (n - 1) * b.N * int(el/period) / max(b.N, 1); len(lat) < want*9/10 {
		b.Logf("only %d exchanges in %v, want about %d: the clients fell behind", len(lat), el, want)
	}
	reportQuantiles(b, lat, "exchange")
	reportQuantiles(b, reqs, "request")
	reportQuantiles(b, answers, "answer")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "exchange-max-µs")
	}
	b.ReportMetric(float64(len(lat))/el.Seconds(), "exchanges/s")
	b.ReportMetric(float64(bulkBytes)*8/el.Seconds()/1e6, "bulk-Mbit/s")
	b.ReportMetric(100*cpu.Seconds()/el.Seconds(), "%core")
}
