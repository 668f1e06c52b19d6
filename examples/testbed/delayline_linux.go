//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// releaseWindow is how early the delay line may release a packet: after each
// wake it writes every packet due within this window, so that at 100 Mbit/s
// it wakes a few thousand times per second instead of once per packet (each
// wake costs tens of µs of CPU on a small VM). A packet therefore spends
// between delay − releaseWindow and delay plus the wake-up lateness in the
// line.
const releaseWindow = 200 * time.Microsecond

// queueCap bounds the packets held by the delay line; beyond it arriving
// packets are dropped and counted. 1<<17 packets of 1500 bytes hold
// 1 Gbit/s for 1.5 s of one-way delay.
const queueCap = 1 << 17

// readBatch bounds the packets read per loop round.
const readBatch = 64

// DelayLine is a user-space propagation delay: a TUN device whose packets are
// held for a fixed time and written back in arrival order, so that routing
// sends them on to their real destination. It carries any IP packet (TCP,
// UDP, ICMP) and changes none.
//
// One locked OS thread runs an event loop: ppoll on the TUN device with a
// timeout at the head packet's due time (ns resolution, 1 ns timer slack),
// read everything available, write everything due. It runs at nice −20 so
// that a loaded machine delays it less (Stats reports whether it got it).
//
// Not SCHED_FIFO, which it used before: a real-time Go thread can livelock
// the process. Leaving a system call, the thread spins (sched_yield) while
// another runtime thread holds its goroutine's status (in Go 1.26, sysmon
// taking its P away; the collector is off in the line's process, see
// delayLineMain); sched_yield from SCHED_FIFO never yields to a normal
// thread, so when that thread waits on the same CPU neither runs until the
// kernel lets normal threads in after 950 ms of each second
// (sched_rt_runtime_us). Measured on the testbed at 100 Mbit/s · 100 ms with
// the receiver's CPU busy: the line's thread ran 938–949 ms at a stretch,
// forwarding nothing, 4 times in 20 s; every udt run collapsed to
// 19–50 Mbit/s. A nice −20 thread shares its CPU under the fair scheduler,
// so the thread it waits for runs within a scheduler slice.
type DelayLine struct {
	tun   int // non-blocking TUN fd
	wake  int // eventfd: Close writes it to end the loop
	name  string
	delay time.Duration
	done  chan struct{}
	once  sync.Once

	mu    sync.Mutex
	stats DelayLineStats
}

// Lateness histogram bucket upper bounds (a release is "late" by now − due).
var lateBounds = []time.Duration{
	0, 100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
}

// DelayLineStats are the delay line's counters.
type DelayLineStats struct {
	Forwarded uint64        `json:"forwarded"` // packets written back to the TUN device
	Dropped   uint64        `json:"dropped"`   // packets dropped because queueCap were held
	Bytes     uint64        `json:"bytes"`     // IP bytes forwarded
	MaxLate   time.Duration `json:"max_late_ns"`
	// Late[i] counts releases with lateness ≤ lateBounds[i]; the last
	// element counts the rest.
	Late         [6]uint64 `json:"late"`
	HighPriority bool      `json:"high_priority"` // the loop runs at nice −20
	// TunDropped counts packets the kernel dropped because the TUN device's
	// queue was full before the line read them (sysfs tx_dropped).
	TunDropped uint64 `json:"tun_dropped"`
}

// LateSummary describes the lateness histogram in one line.
func (s DelayLineStats) LateSummary() string {
	names := []string{"early/on time", "≤100µs", "≤1ms", "≤10ms", "≤100ms", ">100ms"}
	out := ""
	for i, n := range s.Late {
		if n == 0 {
			continue
		}
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", names[i], n)
	}
	return out
}

// StallNote returns a note when more than 0.1 % of the packets left the line
// over 10 ms late: the host descheduled it (on a shared VM even a
// high-priority thread loses its vCPU for tens of ms, and every packet in
// the line then waits), so the path's delay and rate were perturbed while
// that happened.
// It returns "" otherwise.
func (s DelayLineStats) StallNote() string {
	late := s.Late[4] + s.Late[5]
	if s.Forwarded == 0 || float64(late) <= 0.001*float64(s.Forwarded) {
		return ""
	}
	return fmt.Sprintf("%d packets (%.2f %%) left the delay line over 10 ms late (worst %.1f ms): the host descheduled it (vCPU preemption); the path was perturbed meanwhile",
		late, 100*float64(late)/float64(s.Forwarded), float64(s.MaxLate)/1e6)
}

// NewDelayLine creates TUN device name (IFF_TUN, no packet-info header) in
// the calling thread's network namespace (use inNS) and starts holding each
// packet read from it for delay. The caller configures the device (up,
// policy routes) afterwards.
func NewDelayLine(name string, delay time.Duration) (*DelayLine, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w (is the tun module loaded?)", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", name, err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	d := &DelayLine{tun: fd, wake: wake, name: name, delay: delay, done: make(chan struct{})}
	go d.loop()
	return d, nil
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

type heldPacket struct {
	b   []byte
	due int64 // CLOCK_MONOTONIC ns
}

// fifo is a growable ring of held packets.
type fifo struct {
	buf        []heldPacket
	head, size int
}

func (f *fifo) push(p heldPacket) {
	if f.size == len(f.buf) {
		nb := make([]heldPacket, max(64, 2*len(f.buf)))
		for i := 0; i < f.size; i++ {
			nb[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = nb, 0
	}
	f.buf[(f.head+f.size)%len(f.buf)] = p
	f.size++
}

func (f *fifo) peek() *heldPacket { return &f.buf[f.head] }

func (f *fifo) pop() heldPacket {
	p := f.buf[f.head]
	f.buf[f.head] = heldPacket{}
	f.head = (f.head + 1) % len(f.buf)
	f.size--
	return p
}

func (d *DelayLine) loop() {
	defer close(d.done)
	runtime.LockOSThread() // never unlocked: the thread carries its priority and slack
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	// On Linux a thread's nice value is its own: this sets the loop's thread only.
	hi := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -20) == nil
	d.mu.Lock()
	d.stats.HighPriority = hi
	d.mu.Unlock()

	var q fifo
	var local DelayLineStats // flushed to d.stats after each round
	// Packet buffers are recycled through a free list: in steady state the
	// loop allocates nothing, so the garbage collector (off in the line's
	// own process, delayLineMain) has nothing to make it wait for.
	var free [][]byte
	buf := make([]byte, 65536)
	window := int64(releaseWindow)
	fds := []unix.PollFd{{Fd: int32(d.tun), Events: unix.POLLIN}, {Fd: int32(d.wake), Events: unix.POLLIN}}
	for {
		var timeout *unix.Timespec
		if q.size > 0 {
			wait := max(q.peek().due-window-monoNow(), 0)
			ts := unix.NsecToTimespec(wait)
			timeout = &ts
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Ppoll(fds, timeout, nil); err != nil && err != unix.EINTR {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return
		}
		// Read what is available, at most readBatch packets so that a
		// sustained inflow cannot starve the writes.
		for i := 0; i < readBatch && fds[0].Revents&unix.POLLIN != 0; i++ {
			n, err := unix.Read(d.tun, buf)
			if err != nil || n <= 0 {
				break
			}
			if q.size >= queueCap {
				local.Dropped++
				continue
			}
			var b []byte
			if k := len(free); k > 0 && n <= cap(free[k-1]) {
				b, free = free[k-1][:n], free[:k-1]
			} else {
				b = make([]byte, n, max(n, 2048))
			}
			copy(b, buf[:n])
			q.push(heldPacket{b: b, due: monoNow() + int64(d.delay)})
		}
		// Write everything due.
		now := monoNow()
		for q.size > 0 && q.peek().due-window <= now {
			p := q.pop()
			late := time.Duration(now - p.due)
			local.MaxLate = max(local.MaxLate, late)
			i := 0
			for i < len(lateBounds) && late > lateBounds[i] {
				i++
			}
			local.Late[i]++
			if _, err := unix.Write(d.tun, p.b); err == nil {
				local.Forwarded++
				local.Bytes += uint64(len(p.b))
			}
			free = append(free, p.b)
		}
		d.mu.Lock()
		d.stats.merge(&local)
		d.mu.Unlock()
		local = DelayLineStats{}
	}
}

func (s *DelayLineStats) merge(o *DelayLineStats) {
	s.Forwarded += o.Forwarded
	s.Dropped += o.Dropped
	s.Bytes += o.Bytes
	s.MaxLate = max(s.MaxLate, o.MaxLate)
	for i := range s.Late {
		s.Late[i] += o.Late[i]
	}
}

// Stats returns the counters so far.
func (d *DelayLine) Stats() DelayLineStats {
	d.mu.Lock()
	s := d.stats
	d.mu.Unlock()
	// Valid in the device's namespace with a matching /sys (ip netns exec).
	if b, err := os.ReadFile("/sys/class/net/" + d.name + "/statistics/tx_dropped"); err == nil {
		s.TunDropped, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	return s
}

// Close ends the loop, discards packets still held and removes the TUN
// device (it is not persistent: closing its descriptor deletes it). Close is
// idempotent.
func (d *DelayLine) Close() error {
	var err error
	d.once.Do(func() {
		one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
		if _, werr := unix.Write(d.wake, one); werr != nil {
			err = fmt.Errorf("wake delay line: %w", werr)
		}
		<-d.done
		err = errors.Join(err, unix.Close(d.tun), unix.Close(d.wake))
	})
	return err
}
