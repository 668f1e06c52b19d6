package conn

import "sync"

// Each connection's timers are one runtime timer (Conn.timer), armed after every engine call
// with the engine's NextTimer (arm): the runtime keeps the deadlines, per P, with no lock that
// other connections share. When one fires, its callback only queues the connection here, and
// the socket's timer goroutine runs the engine's timers (OnTimer) for the queued connections one
// after the other. So a thousand timers firing together (retransmission timeouts on a starved
// machine) cost one goroutine working through them, not a thousand goroutines contending for the
// CPU and the socket, and the timer goroutine's sends of several connections go out of one outbox.

// timerQueue holds the connections whose timer fired, for the timer goroutine.
type timerQueue struct {
	mu    sync.Mutex
	conns []*Conn
	spare []*Conn
	wake  chan struct{} // 1-buffered: conns is not empty
	stop  chan struct{} // closed by close
	done  chan struct{} // closed when the goroutine has exited
}

func newTimerQueue() *timerQueue {
	return &timerQueue{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// push queues c unless it is queued already (c.timerQueued).
func (q *timerQueue) push(c *Conn) {
	if c.timerQueued.Swap(true) {
		return
	}
	q.mu.Lock()
	q.conns = append(q.conns, c)
	q.mu.Unlock()
	signal(q.wake)
}

// run is the timer goroutine of socket m: it runs the timers of each queued connection, then
// sends what they produced, until close.
func (q *timerQueue) run(m *mux) {
	defer close(q.done)
	var out outbox
	for {
		select {
		case <-q.wake:
		case <-q.stop:
			return
		}
		q.mu.Lock()
		batch := q.conns
		q.conns, q.spare = q.spare[:0], nil
		q.mu.Unlock()
		for i, c := range batch {
			c.timerQueued.Store(false)
			c.runTimers(&out)
			batch[i] = nil
		}
		out.flush(m.io)
		q.mu.Lock()
		if q.spare == nil {
			q.spare = batch[:0]
		}
		q.mu.Unlock()
	}
}

// close stops the timer goroutine and waits for it. Connections queued then are forgotten: the
// socket is going away.
func (q *timerQueue) close() {
	close(q.stop)
	<-q.done
}
