package main

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// memLink is one direction of an in-memory connection: a buffer of cap bytes (the transport's
// send buffer and the path), drained by the reader at most rate bytes/s (0: at once).
type memLink struct {
	chunks chan []byte
	gone   chan struct{} // closed when the reading end closed
	once   sync.Once
}

func newMemLink(capBytes int) *memLink {
	return &memLink{chunks: make(chan []byte, max(capBytes/memChunk, 1)), gone: make(chan struct{})}
}

const memChunk = 16 << 10

// memEnd is one end of an in-memory connection for synctest bubbles (channels only).
type memEnd struct {
	in, out *memLink
	rest    []byte
	rate    float64 // bytes/s this end reads at most
	began   time.Time
	read    int64
	dl      time.Time
	closed  sync.Once
}

func memPair(capBytes int, readRate float64) (snd, rcv *memEnd) {
	ab, ba := newMemLink(capBytes), newMemLink(1<<20)
	return &memEnd{in: ba, out: ab}, &memEnd{in: ab, out: ba, rate: readRate}
}

func (e *memEnd) Read(p []byte) (int, error) {
	if len(e.rest) == 0 {
		var timeout <-chan time.Time
		if !e.dl.IsZero() {
			timeout = time.After(time.Until(e.dl))
		}
		select {
		case b, ok := <-e.in.chunks:
			if !ok {
				return 0, io.EOF
			}
			e.rest = b
		case <-timeout:
			return 0, os.ErrDeadlineExceeded
		}
	}
	n := copy(p, e.rest)
	e.rest = e.rest[n:]
	if e.rate > 0 {
		if e.began.IsZero() {
			e.began = time.Now()
		}
		e.read += int64(n)
		due := e.began.Add(time.Duration(float64(e.read) / e.rate * 1e9))
		time.Sleep(time.Until(due))
	}
	return n, nil
}

func (e *memEnd) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += memChunk {
		c := append([]byte(nil), p[off:min(off+memChunk, len(p))]...)
		select {
		case e.out.chunks <- c:
		case <-e.out.gone:
			return off, errors.New("broken pipe")
		}
	}
	return len(p), nil
}

func (e *memEnd) Close() error {
	e.closed.Do(func() {
		close(e.out.chunks)
		close(e.in.gone)
	})
	return nil
}

func (e *memEnd) Abort() error                      { return e.Close() }
func (e *memEnd) SetReadDeadline(t time.Time) error { e.dl = t; return nil }
func (e *memEnd) RemoteAddr() net.Addr              { return &net.UDPAddr{} }
func (e *memEnd) Stats(bool) linkStats              { return unknownStats() }
func (e *memEnd) Backend() string                   { return "" }

// TestIntervalsCountDelivered: a sender whose transport buffers 8 MB in front of a 40 Mbit/s
// path reports, in every interval, what the receiver got: never more than the path carries,
// never nothing while data arrives. Before, its intervals counted the bytes it had written:
// 8 MB in the first 100 ms (670 Mbit/s on a 40 Mbit/s path), and a first tick of GB/s on the
// progress bar.
func TestIntervalsCountDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 5e6 // bytes/s: 40 Mbit/s
		snd, rcv := memPair(8<<20, rate)
		tr := testTransport(t)
		rs := newSession(rcv, "tcp", tr)
		ss := newSession(snd, "tcp", tr)
		rs.progress, ss.progress = true, true
		var wg sync.WaitGroup
		wg.Go(func() {
			rs.receive(nil, nil)
			rcv.Close()
		})
		o := outputFlags{interval: 100 * time.Millisecond}
		mon := startMonitor(ss, true, &o, io.Discard, io.Discard, "", "", 20<<20, 0)
		row, err := ss.send(sendSpec{bytes: 20 << 20})
		ivs := mon.stop()
		snd.Close()
		wg.Wait()
		if err != nil || !row.SHA256OK {
			t.Fatalf("send: %v, row %+v", err, row)
		}
		var sum int64
		for i, iv := range ivs {
			sum += iv.Bytes
			// The receiver reads 5 MB/s and counts whole frames; its reports come every
			// progressEvery, so an interval may hold one report period and one frame more
			// than the path carried in it.
			d := iv.End - iv.Start
			limit := (rate*(d+progressEvery.Seconds()) + frameSize) * 8 / 1e6 / d
			if iv.Mbps > limit {
				t.Errorf("interval %d [%.2f, %.2f]: %.1f Mbit/s through a 40 Mbit/s path", i, iv.Start, iv.End, iv.Mbps)
			}
			if iv.End < 3.9 && iv.Bytes == 0 {
				t.Errorf("interval %d [%.2f, %.2f]: nothing while data arrived", i, iv.Start, iv.End)
			}
		}
		if sum != 20<<20 {
			t.Errorf("intervals add up to %d bytes, want %d", sum, 20<<20)
		}
	})
}
