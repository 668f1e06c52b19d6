package pacer_test

import (
	"fmt"
	"time"

	"github.com/udtgo/udt/pacer"
	"github.com/udtgo/udt/pacer/pacertest"
)

// The Scheduler alone, exact: 10 µs apart, burst 4. A release 25 µs late sends the two packets
// that are due at once (catch-up); Next stays on the absolute grid.
func ExampleScheduler() {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * time.Microsecond, Burst: 4, Tolerance: pacer.Exact})
	t0 := time.Unix(0, 0)
	for _, at := range []time.Duration{0, 5, 10, 35, 40} {
		now := t0.Add(at * time.Microsecond)
		n := s.Release(now, 8)
		fmt.Printf("at %2dµs: %d released, next at %2dµs\n", at, n, s.Next().Sub(t0)/time.Microsecond)
	}
	// Output:
	// at  0µs: 1 released, next at 10µs
	// at  5µs: 0 released, next at 10µs
	// at 10µs: 1 released, next at 20µs
	// at 35µs: 2 released, next at 40µs
	// at 40µs: 1 released, next at 50µs
}

// The same with a tolerance of 15 µs: each release also lets out the packets due within 15 µs
// of now, so fewer wake-ups send the same packets, none more than 15 µs early; the grid is
// unchanged.
func ExampleScheduler_tolerance() {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * time.Microsecond, Burst: 4, Tolerance: 15 * time.Microsecond})
	t0 := time.Unix(0, 0)
	for _, at := range []time.Duration{0, 5, 10, 35, 40} {
		now := t0.Add(at * time.Microsecond)
		n := s.Release(now, 8)
		fmt.Printf("at %2dµs: %d released, next at %2dµs\n", at, n, s.Next().Sub(t0)/time.Microsecond)
	}
	// Output:
	// at  0µs: 2 released, next at 20µs
	// at  5µs: 1 released, next at 30µs
	// at 10µs: 0 released, next at 30µs
	// at 35µs: 3 released, next at 60µs
	// at 40µs: 0 released, next at 60µs
}

// exampleSender is the shape of a connection on the pacer: a queue of packets paced by a Scheduler,
// with UDT's probing packet pair (spec §6.2): the packet after each seq&0xF == 0 leaves at once.
type exampleSender struct {
	s      *pacer.Scheduler
	queued int // packets waiting to be sent
	seq    int // next sequence number
	t0     time.Time
}

func (c *exampleSender) send(now time.Time) {
	fmt.Printf("seq %2d at +%3dµs\n", c.seq, now.Sub(c.t0)/time.Microsecond)
	c.seq++
	c.queued--
}

func (c *exampleSender) Release(now time.Time, max int) (sent int, next time.Time) {
	n := c.s.Release(now, min(max, c.queued))
	for range n {
		probe := c.seq&0xF == 0
		c.send(now)
		sent++
		if probe && c.queued > 0 { // the pair's second packet, back to back
			c.s.Force(now, 1)
			c.send(now)
			sent++
		}
	}
	if c.queued == 0 {
		return sent, time.Time{} // idle until Schedule (new data, ACK, NAK)
	}
	return sent, c.s.Next()
}

// A Pacer driven by pacertest's manual clock: 19 packets at 10 µs; packets 0 and 1 and 16 and
// 17 are packet pairs, and the long-run rate is kept (each pair takes two slots).
func ExamplePacer() {
	clk := pacertest.NewClock(time.Unix(0, 0))
	p := pacer.New(clk, pacer.Config{Now: clk.Now, Tolerance: pacer.Exact})
	c := &exampleSender{s: pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * time.Microsecond, Tolerance: pacer.Exact}),
		queued: 19, t0: clk.Now()}
	h := p.Add(c)
	h.Schedule(clk.Now()) // data queued: send from now
	for {
		<-clk.Blocked()
		if _, ok := clk.AdvanceToBlocked(); !ok {
			break // the pacer is idle: all sent
		}
	}
	h.Remove()
	p.Close()
	st := p.Stats()
	fmt.Println("packets", st.Packets, "lateness max", st.Lateness.Max, "µs")
	// Output:
	// seq  0 at +  0µs
	// seq  1 at +  0µs
	// seq  2 at + 20µs
	// seq  3 at + 30µs
	// seq  4 at + 40µs
	// seq  5 at + 50µs
	// seq  6 at + 60µs
	// seq  7 at + 70µs
	// seq  8 at + 80µs
	// seq  9 at + 90µs
	// seq 10 at +100µs
	// seq 11 at +110µs
	// seq 12 at +120µs
	// seq 13 at +130µs
	// seq 14 at +140µs
	// seq 15 at +150µs
	// seq 16 at +160µs
	// seq 17 at +160µs
	// seq 18 at +180µs
	// packets 19 lateness max 0 µs
}
