package conn

import (
	"sync"
	"sync/atomic"

	"github.com/udtgo/udt/conn/trace"
)

// maxQueuedEvents bounds the events a connection holds for a Tracer that is behind: 65 536
// events (~9 MB) are over 0.1 s of a 3 Gbit/s transfer's events (~500 000/s: every packet
// sent and received, ACKs, …); beyond that events are dropped and counted (trace.EventsLost).
const maxQueuedEvents = 1 << 16

// traceQueue delivers one connection's events to its Tracer from a goroutine of its own, so
// that a Tracer doing I/O never runs under the connection's mutex, on its pacer or on its
// reader. The goroutine first asks Config.Tracer for the connection's Tracer (which may open a
// file); events queue meanwhile. It ends in close, after delivering everything queued.
type traceQueue struct {
	off atomic.Bool // the factory returned nil: drop everything

	mu      sync.Mutex
	pending []trace.Event
	lost    int
	closed  bool

	wake chan struct{} // 1-buffered: pending grew, or closed
	done chan struct{}
}

func newTraceQueue() *traceQueue {
	return &traceQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// start runs the delivery goroutine. If the factory declines the connection, declined is
// called (from that goroutine, without locks) so that the engine stops building events.
func (q *traceQueue) start(factory func(trace.ConnInfo) trace.Tracer, info trace.ConnInfo, declined func()) {
	go q.run(factory, info, declined)
}

// add queues ev; it never blocks (the connection's mutex may be held).
func (q *traceQueue) add(ev trace.Event) {
	if q.off.Load() {
		return
	}
	q.mu.Lock()
	switch {
	case q.closed:
	case len(q.pending) >= maxQueuedEvents:
		q.lost++
	default:
		q.pending = append(q.pending, ev)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *traceQueue) run(factory func(trace.ConnInfo) trace.Tracer, info trace.ConnInfo, declined func()) {
	defer close(q.done)
	t := factory(info)
	if t == nil {
		q.off.Store(true)
		declined()
	}
	var batch []trace.Event
	for {
		<-q.wake
		q.mu.Lock()
		batch, q.pending = q.pending, batch[:0]
		lost, closed := q.lost, q.closed
		q.lost = 0
		q.mu.Unlock()
		if t != nil {
			for _, ev := range batch {
				t.Event(ev)
			}
			if lost > 0 {
				ev := trace.Event{Kind: trace.EventsLost, Packets: lost}
				if len(batch) > 0 {
					ev.Time = batch[len(batch)-1].Time
				}
				t.Event(ev)
			}
		}
		clear(batch) // drop references to Detail strings
		if closed {
			return
		}
	}
}

// close stops queuing and returns once every queued event has been delivered.
func (q *traceQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}
