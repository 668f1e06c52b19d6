package conn

import (
	"log/slog"
	"sync"
	"time"

	"github.com/udtgo/udt/internal/udpio"
)

// Kernel receive-buffer overflows. When the reader falls behind, the kernel drops datagrams at
// the socket's full receive queue before any of our code sees them: the sender then only sees
// losses. The multiplexer reads the socket's drop counter (udpio.SocketDrops, Linux) for Stats
// and, from the reader goroutine at most once per dropCheckEvery, logs a warning through
// Config.Logger when it grew (rate-limited as every reason is, observe.go: the first at once,
// then at most one line per 10 s with the drops since the last), so that a receive buffer too
// small for the rate (the kernel's default is ~208 KiB, its cap net.core.rmem_max) shows in the
// logs instead of only as a lower rate.

// dropCheckEvery is how often the reader reads the counter: a getsockopt per second of reading,
// nothing against a batch per ms.
var dropCheckEvery = time.Second

// socketDrops tracks one socket's kernel drop counter from the multiplexer's start.
type socketDrops struct {
	mu        sync.Mutex
	ok        bool   // the counter exists (Linux, a *net.UDPConn)
	last      uint32 // counter at the last read
	total     uint64 // drops since the multiplexer started
	nextCheck time.Time
	logged    uint64 // total when the reader last looked (checkDrops)
}

// initDrops takes the counter's starting value (the socket may have dropped before we used it).
func (m *mux) initDrops() {
	d, _, ok := udpio.SocketDrops(m.pc)
	m.sockDrops.ok, m.sockDrops.last = ok, d
}

// readDrops reads the counter and returns the drops since the start and the receive buffer size.
func (m *mux) readDrops() (uint64, int) {
	s := &m.sockDrops
	if !s.ok {
		return 0, 0
	}
	d, rcvbuf, ok := udpio.SocketDrops(m.pc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.total += uint64(d - s.last) // 32-bit counter: the difference wraps correctly
		s.last = d
	}
	return s.total, rcvbuf
}

// kernelDrops returns the datagrams the kernel dropped at the socket since the multiplexer started.
func (m *mux) kernelDrops() uint64 {
	n, _ := m.readDrops()
	return n
}

// checkDrops runs on the reader goroutine after each read: see socketDrops.
func (m *mux) checkDrops(now time.Time) {
	s := &m.sockDrops
	if !s.ok || now.Before(s.nextCheck) {
		return
	}
	s.nextCheck = now.Add(dropCheckEvery)
	total, rcvbuf := m.readDrops()
	delta := total - s.logged
	s.logged = total
	o := &m.obs
	if delta == 0 || o.log == nil {
		return
	}
	o.mu.Lock()
	n, ok := o.lim.note(reasonKernelDrops, delta, now)
	if ok {
		rec := logRecord{level: slog.LevelWarn,
			msg: "the kernel dropped datagrams at a full socket receive buffer; raise it (SetReadBuffer on your socket, net.core.rmem_max)"}
		rec.add(slog.Uint64("drops", n), slog.Uint64("total", total), slog.Int("rcvbuf_bytes", rcvbuf))
		o.appendLocked(rec)
	}
	o.mu.Unlock()
	if ok {
		o.flush() // the reader goroutine: no lock held
	}
}
