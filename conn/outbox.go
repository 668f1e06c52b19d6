package conn

import (
	"net/netip"
	"sync"

	"github.com/udtgo/udt/internal/stream"
	"github.com/udtgo/udt/internal/udpio"
)

// outbox collects the datagrams that engine calls produced (control packets, handshake answers)
// while a connection's lock was held, so that they are sent after it is released: one
// udpio.WriteBatch per destination, the batched writer data goes through (equal-sized packets
// for one peer, such as a batch of ACK2s, leave in one GSO send where the kernel has it). Each
// goroutine that calls engines has its own: the reader, the data pacer and the timer goroutine
// keep one each, application goroutines take one from outboxes.
type outbox struct {
	buf  []byte   // the datagrams back to back
	pkts []outPkt // in the order added
	bufs [][]byte // scratch for WriteBatch
	seen []bool   // scratch for flush: pkts[i] is in a batch already
}

type outPkt struct {
	to       netip.AddrPort
	off, end int
}

// add queues a copy of b for to.
func (o *outbox) add(b []byte, to netip.AddrPort) {
	off := len(o.buf)
	o.buf = append(o.buf, b...)
	o.pkts = append(o.pkts, outPkt{to: to, off: off, end: len(o.buf)})
}

// takeControl moves the control packets ep queued into o, for to. Caller holds the
// connection's lock.
func (o *outbox) takeControl(ep *stream.Endpoint, to netip.AddrPort) {
	for {
		b, ok := ep.PopControl()
		if !ok {
			return
		}
		o.add(b, to)
	}
}

// reportRetries bounds the re-sends of a write refused by ICMP reports' pending errors: each
// refusal consumes one (a report that arrived since the last), so a few suffice unless a flood of
// them is arriving, when the datagrams count as lost.
const reportRetries = 4

// writeAll sends bufs to to in one batch, again from the first unsent datagram when an ICMP
// report's pending error refused it (up to reportRetries times); other errors lose the rest.
func writeAll(w *udpio.Conn, bufs [][]byte, to netip.AddrPort) {
	for range 1 + reportRetries {
		n, err := w.WriteBatch(bufs, to)
		if !refusedByReport(err) || n >= len(bufs) {
			return
		}
		bufs = bufs[n:]
	}
}

// flush sends everything queued, in order for each destination, and empties o. A send error
// loses those datagrams, which the protocol recovers like any other loss (a lost ACK is
// repeated, a lost NAK re-reported, a lost Shutdown re-sent).
func (o *outbox) flush(w *udpio.Conn) {
	if len(o.pkts) == 0 {
		return
	}
	o.seen = append(o.seen[:0], make([]bool, len(o.pkts))...)
	for i := range o.pkts {
		if o.seen[i] {
			continue
		}
		to := o.pkts[i].to
		o.bufs = o.bufs[:0]
		for j := i; j < len(o.pkts); j++ {
			if p := o.pkts[j]; !o.seen[j] && p.to == to {
				o.bufs = append(o.bufs, o.buf[p.off:p.end:p.end])
				o.seen[j] = true
			}
		}
		writeAll(w, o.bufs, to)
	}
	clear(o.bufs)
	o.bufs = o.bufs[:0]
	o.buf = o.buf[:0]
	o.pkts = o.pkts[:0]
}

// outboxes serve application goroutines (Read's window updates, Close's Shutdown).
var outboxes = sync.Pool{New: func() any { return new(outbox) }}

// maxPooledOutbox is the largest buffer an outbox keeps when it goes back to the pool: a few
// control packets' worth; a rare large batch is left to the garbage collector.
const maxPooledOutbox = 16 << 10

// flushPooled sends o's datagrams (if o is not nil) and returns it to the pool.
func flushPooled(o *outbox, w *udpio.Conn) {
	if o == nil {
		return
	}
	o.flush(w)
	if cap(o.buf) <= maxPooledOutbox {
		outboxes.Put(o)
	}
}
