package stream

import "time"

// The engine never sends, wakes or signals anything itself: every call only changes its state,
// and conn pulls what it must do next, outside its lock (quic-go's run loop works the same way).
//
//   - Control packets (ACK, light ACK, ACK2, NAK, keep-alive, Shutdown) are queued inside the
//     engine by whichever call produced them (HandlePacket, OnTimer, Read's window update, Close)
//     and taken with PopControl; conn sends them through the same batched writer as data.
//   - Data packets are pulled with Release when Departure says they are due.
//   - Effects sums up the rest: the next departure, the next timer, readiness, breakage, and
//     whether a closed connection is finished.

// maxCtrlQueue bounds the control bytes waiting between two drains. conn drains after every call
// (or batch of up to 64 HandlePacket calls, which queue at most a NAK of one range, an ACK, an
// ACK2 and a Shutdown each: ~100 bytes), so the bound is reached only if the caller never drains;
// packets beyond it are dropped and counted (Stats.CtrlQueueDrops), as a full socket would drop them.
const maxCtrlQueue = 64 << 10

// ctrlQueue holds encoded control packets back to back, in the order they were queued.
type ctrlQueue struct {
	buf  []byte
	ends []int // ends[i] is the end offset of packet i in buf
	head int   // packets already popped
}

func (q *ctrlQueue) push(b []byte) bool {
	if len(q.buf)+len(b) > maxCtrlQueue {
		return false
	}
	q.buf = append(q.buf, b...)
	q.ends = append(q.ends, len(q.buf))
	return true
}

func (q *ctrlQueue) pop() ([]byte, bool) {
	if q.head == len(q.ends) {
		q.buf, q.ends, q.head = q.buf[:0], q.ends[:0], 0
		return nil, false
	}
	start := 0
	if q.head > 0 {
		start = q.ends[q.head-1]
	}
	end := q.ends[q.head]
	q.head++
	return q.buf[start:end:end], true
}

func (q *ctrlQueue) len() int { return len(q.ends) - q.head }

// PopControl returns the oldest queued control packet (one datagram for the peer) and removes it
// from the queue; ok is false when the queue is empty. b aliases the engine's queue and stays
// valid until the next call of any Endpoint method: copy it out (or send it) first.
func (e *Endpoint) PopControl() (b []byte, ok bool) { return e.ctrlq.pop() }

// PendingControl returns the number of control packets waiting for PopControl.
func (e *Endpoint) PendingControl() int { return e.ctrlq.len() }

// Effects is what conn must act on after engine calls, read in one call (all of it is derived
// from the engine's state, so reading it twice gives the same answer).
type Effects struct {
	// Departure is when Release should run next: at or before now means at once; zero means
	// nothing is sendable until another call changes that (Write, an ACK or NAK, a timer).
	Departure time.Time
	// Timer is when OnTimer should run next; zero means never (see NextTimer).
	Timer time.Time
	// Control is the number of control packets waiting for PopControl.
	Control int
	// Readable: Read would return data, io.EOF or the error. Writable: Write would take bytes, or
	// the connection stopped sending (so that a blocked writer wakes and sees why).
	Readable, Writable bool
	// Err is non-nil once the connection broke (see Err).
	Err error
	// Done: Close was called and the engine has nothing more to do (see Done).
	Done bool
}

// Effects returns what conn must act on now: schedule the departure and the timer, send the
// queued control packets, wake readers and writers, break or finish the connection.
func (e *Endpoint) Effects() Effects {
	return Effects{
		Departure: e.Departure(),
		Timer:     e.NextTimer(),
		Control:   e.ctrlq.len(),
		Readable:  e.CanRead(),
		Writable:  e.CanWrite(),
		Err:       e.err,
		Done:      e.Done(),
	}
}
