package stream

import (
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/cputime"
)

// ctrlQueue holds the control packets taken from one endpoint for delivery to the other (a
// packet must not be handed to the peer while its sender's queue may still change).
type ctrlCopy struct {
	bufs [][]byte
	n    int
}

// take copies e's queued control packets.
func (q *ctrlCopy) take(e *Endpoint) {
	for {
		b, ok := e.PopControl()
		if !ok {
			return
		}
		if q.n == len(q.bufs) {
			q.bufs = append(q.bufs, make([]byte, 0, 1500))
		}
		q.bufs[q.n] = append(q.bufs[q.n][:0], b...)
		q.n++
	}
}

// benchPair moves data from a to b over a perfect zero-delay wire, one Release batch at a time.
type benchPair struct {
	a, b       *Endpoint
	qa, qb     ctrlCopy
	now        time.Time
	bufs       [][]byte
	src, rbuf  []byte
	pkts, read int
}

func newBenchPair(cc congestion.Controller) *benchPair { return newBenchPairBuf(cc, 0) }

func newBenchPairBuf(cc congestion.Controller, sendBuf int) *benchPair {
	p := &benchPair{now: time.Unix(1_700_000_000, 0), src: make([]byte, 256<<10), rbuf: make([]byte, 256<<10)}
	p.a = New(Config{LocalID: 1, PeerID: 2, ISN: 1<<31 - 1000, PeerISN: 9, Controller: cc, SendBuffer: sendBuf,
		Start: p.now}, p.now)
	p.b = New(Config{LocalID: 2, PeerID: 1, ISN: 9, PeerISN: 1<<31 - 1000, Start: p.now}, p.now)
	p.bufs = make([][]byte, 16)
	for i := range p.bufs {
		p.bufs[i] = make([]byte, 1500)
	}
	return p
}

func (p *benchPair) drain() {
	p.qa.take(p.a)
	p.qb.take(p.b)
	for p.qa.n > 0 || p.qb.n > 0 {
		n := p.qa.n
		p.qa.n = 0
		for i := 0; i < n; i++ {
			p.b.HandlePacket(p.now, p.qa.bufs[i])
		}
		n = p.qb.n
		p.qb.n = 0
		for i := 0; i < n; i++ {
			p.a.HandlePacket(p.now, p.qb.bufs[i])
		}
		p.qa.take(p.a)
		p.qb.take(p.b)
	}
}

// step writes, releases one batch, delivers it, reads, and runs due timers.
func (p *benchPair) step() {
	for p.a.Write(p.src) > 0 {
	}
	n, _ := p.a.Release(p.now, p.bufs)
	for i := 0; i < n; i++ {
		p.b.HandlePacket(p.now, p.bufs[i])
		p.bufs[i] = p.bufs[i][:cap(p.bufs[i])]
		p.now = p.now.Add(time.Microsecond)
	}
	p.pkts += n
	for {
		k, _ := p.b.Read(p.rbuf)
		if k == 0 {
			break
		}
		p.read += k
	}
	p.drain()
	for _, e := range []*Endpoint{p.a, p.b} {
		if !e.NextTimer().After(p.now) {
			e.OnTimer(p.now)
		}
	}
	p.drain()
	if n == 0 {
		p.now = p.now.Add(time.Microsecond)
	}
}

// BenchmarkEnginePerPacket measures the engine's CPU per data packet for both ends together:
// Write, Release (encode + copy), HandlePacket (decode + copy), Read, ACK/ACK2/light ACK and
// timers. It reports ns/pkt (wall), cpu-ns/pkt (process CPU: steadier on a loaded machine),
// allocs (must be 0 in steady state) and the payload rate one core could sustain through the
// engine alone.
func BenchmarkEnginePerPacket(b *testing.B) {
	p := newBenchPair(nil)
	for p.pkts < 100_000 { // warm up: buffers and rings reach their steady size
		p.step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := p.pkts, cputime.Process()
	for p.pkts-start < b.N {
		p.step()
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(p.pkts-start)
	b.ReportMetric(ns, "ns/pkt")
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(p.pkts-start), "cpu-ns/pkt")
	b.ReportMetric(float64(p.a.payloadSize)*8/ns, "Gbit/s-engine")
	if err := p.a.invariants(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEngineLossy is the same with 1 % of data packets lost on the wire.
func BenchmarkEngineLossy(b *testing.B) {
	p := newBenchPair(nil)
	drop := 0
	lossyStep := func() {
		for p.a.Write(p.src) > 0 {
		}
		n, _ := p.a.Release(p.now, p.bufs)
		for i := 0; i < n; i++ {
			if drop++; drop%100 != 0 {
				p.b.HandlePacket(p.now, p.bufs[i])
			}
			p.bufs[i] = p.bufs[i][:cap(p.bufs[i])]
			p.now = p.now.Add(time.Microsecond)
		}
		p.pkts += n
		for {
			k, _ := p.b.Read(p.rbuf)
			if k == 0 {
				break
			}
		}
		p.drain()
		for _, e := range []*Endpoint{p.a, p.b} {
			if !e.NextTimer().After(p.now) {
				e.OnTimer(p.now)
			}
		}
		p.drain()
		if n == 0 {
			p.now = p.now.Add(time.Microsecond)
		}
	}
	for p.pkts < 100_000 {
		lossyStep()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := p.pkts, cputime.Process()
	for p.pkts-start < b.N {
		lossyStep()
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(p.pkts-start)
	b.ReportMetric(ns, "ns/pkt")
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(p.pkts-start), "cpu-ns/pkt")
	b.ReportMetric(float64(p.a.Stats().PktRetrans)/float64(p.pkts), "retrans/pkt")
}

// BenchmarkEngineSmallSendBuffer uses a 1 MiB send buffer, which stays in cache: the difference
// from BenchmarkEnginePerPacket is the memory traffic of a 12 MiB buffer kept full.
func BenchmarkEngineSmallSendBuffer(b *testing.B) {
	p := newBenchPairBuf(nil, 1<<20)
	for p.pkts < 100_000 {
		p.step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := p.pkts, cputime.Process()
	for p.pkts-start < b.N {
		p.step()
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(p.pkts-start)
	b.ReportMetric(ns, "ns/pkt")
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(p.pkts-start), "cpu-ns/pkt")
	b.ReportMetric(float64(p.a.payloadSize)*8/ns, "Gbit/s-engine")
}
