package simnet

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Behind a 120 Mbit/s serial link (0.1 ms per 1500-byte packet) a 1 ms coarse-release stage
// lets the packets go in batches on the millisecond: of 30 sent back to back, those that
// finished serialising in each millisecond leave together at its end, in order. Held packets
// are not in the drop-tail queue: a queue of 2 packets drops none of 20 sent at the link's rate
// although 10 wait for each release.
func TestReleaseBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		p := NewPair(1, LinkConfig{Rate: 120_000_000, ReleaseEvery: ms, Delay: 5 * ms}, LinkConfig{})
		defer p.Close()
		start := time.Now() // the link was created now: in phase with its ticks
		send(t, p.A, p.B.LocalAddr(), 30, 1500, 0)
		got := drain(t, p.B, time.Second)
		if len(got) != 30 {
			t.Fatalf("got %d arrivals, want 30", len(got))
		}
		for i, a := range got {
			// packet i finishes serialising at (i+1)·0.1 ms and is released at the next whole ms
			want := 5*ms + time.Duration((i+10)/10)*ms
			if d := a.at.Sub(start); d != want || a.seq != uint32(i) {
				t.Errorf("packet %d (seq %d) at +%v, want +%v", i, a.seq, d, want)
			}
		}

		p.AB.SetConfig(LinkConfig{Rate: 120_000_000, ReleaseEvery: ms, QueuePackets: 2})
		go send(t, p.A, p.B.LocalAddr(), 20, 1500, 100*time.Microsecond)
		if got := drain(t, p.B, time.Second); len(got) != 20 || inversions(got) != 0 {
			t.Errorf("at the link's rate behind a 2-packet queue: %d arrivals (want 20), %d inversions", len(got), inversions(got))
		}
		if st := p.AB.Stats(); st.DroppedQueue != 0 {
			t.Errorf("%d queue drops, want 0: held packets count against the queue", st.DroppedQueue)
		}
	})
}

// Without a Rate the release stage aggregates: packets sent every 0.3 ms through a 4 ms release
// (ACKs on a hop that batches them) arrive in bursts on the multiples of 4 ms, in order, none
// lost, each burst holding what was sent since the last.
func TestReleaseAggregates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{ReleaseEvery: 4 * time.Millisecond}, LinkConfig{})
		defer p.Close()
		time.Sleep(500 * time.Microsecond) // out of phase: the first release is 3.5 ms away
		start := time.Now()
		go send(t, p.A, p.B.LocalAddr(), 100, 64, 300*time.Microsecond)
		got := drain(t, p.B, time.Second)
		if len(got) != 100 || inversions(got) != 0 {
			t.Fatalf("%d arrivals (want 100), %d inversions", len(got), inversions(got))
		}
		bursts := map[time.Duration]int{}
		for _, a := range got {
			sent := start.Add(time.Duration(a.seq) * 300 * time.Microsecond)
			rel := a.at.Sub(start.Add(-500 * time.Microsecond)) // since the last tick
			if rel%(4*time.Millisecond) != 0 || a.at.Before(sent) || a.at.Sub(sent) >= 4*time.Millisecond {
				t.Fatalf("seq %d sent at +%v arrived at +%v: not at the next 4 ms tick", a.seq, sent.Sub(start), a.at.Sub(start))
			}
			bursts[a.at.Sub(start)]++
		}
		// 100 packets over 30 ms: 8 or 9 releases of 13–14 packets, the first one of 12
		if len(bursts) < 8 || len(bursts) > 9 {
			t.Errorf("%d releases, want 8–9: %v", len(bursts), bursts)
		}
	})
}

// nextTick rounds up to the period's multiples from the epoch and keeps exact ticks.
func TestNextTick(t *testing.T) {
	base := time.Now()
	for _, c := range []struct{ in, want time.Duration }{
		{0, 0}, {1, time.Millisecond}, {999_999, time.Millisecond}, {time.Millisecond, time.Millisecond},
		{time.Millisecond + 1, 2 * time.Millisecond}, {-5, -5},
	} {
		if got := nextTick(base.Add(c.in), base, time.Millisecond).Sub(base); got != c.want {
			t.Errorf("nextTick(+%v) = +%v, want +%v", c.in, got, c.want)
		}
	}
}

// jitterDelays sends count packets of 1500 bytes back to back through a 1 Gbit/s link with
// FIFO jitter of 5 ms and returns each packet's delay beyond its serialisation.
func jitterDelays(t *testing.T, hold time.Duration, count int) []time.Duration {
	var out []time.Duration
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(3, LinkConfig{Rate: 1_000_000_000, Jitter: 5 * time.Millisecond, JitterHold: hold}, LinkConfig{})
		defer p.Close()
		start := time.Now()
		go send(t, p.A, p.B.LocalAddr(), count, 1500, 12*time.Microsecond) // the link's rate
		got := drain(t, p.B, time.Second)
		if len(got) != count || inversions(got) != 0 {
			t.Fatalf("%d arrivals (want %d), %d inversions", len(got), count, inversions(got))
		}
		for _, a := range got {
			dep := start.Add(time.Duration(a.seq)*12*time.Microsecond + 12*time.Microsecond)
			out = append(out, a.at.Sub(dep))
		}
	})
	slices.Sort(out)
	return out
}

// FIFO jitter at 1 Gbit/s: with a draw per packet each arrival waits for the latest of ~400
// recent draws, so the delay hardly varies (its 5th percentile is above 4 ms of the 5); with a
// draw per 1 ms slot it spans the range (5th percentile below 1 ms, 95th above 4 ms; FIFO order
// lifts a slot that drew less than its predecessor's delay less the slot's length), still without
// reordering.
func TestJitterHoldAtRate(t *testing.T) {
	const n = 5000 // 60 ms of packets: 60 slots of 1 ms
	ms := time.Millisecond
	per := jitterDelays(t, 0, n)
	if p5 := per[n/20]; p5 < 4*ms {
		t.Errorf("per-packet FIFO jitter at rate: 5th percentile %v, expected it to crowd near 5 ms", p5)
	}
	held := jitterDelays(t, ms, n)
	t.Logf("5th–95th percentile of the delay: per packet %v–%v, per 1 ms slot %v–%v", per[n/20], per[n-n/20], held[n/20], held[n-n/20])
	if p5, p95 := held[n/20], held[n-n/20]; p5 > ms || p95 < 4*ms {
		t.Errorf("jitter held per 1 ms slot: 5th–95th percentile %v–%v, want below 1 ms to above 4 ms", p5, p95)
	}
	if held[0] < 0 || held[n-1] > 5*ms+12*time.Microsecond {
		t.Errorf("delay %v–%v outside [0, 5 ms]", held[0], held[n-1])
	}
}

// A run with release and held jitter repeats exactly from the same seed.
func TestReleaseJitterDeterministic(t *testing.T) {
	run := func() []time.Duration {
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			p := NewPair(7, LinkConfig{Rate: 100_000_000, QueuePackets: 50, ReleaseEvery: time.Millisecond,
				Jitter: 3 * time.Millisecond, JitterHold: time.Millisecond, Loss: 0.05}, LinkConfig{})
			defer p.Close()
			start := time.Now()
			go send(t, p.A, p.B.LocalAddr(), 2000, 1500, 100*time.Microsecond)
			for _, a := range drain(t, p.B, time.Second) {
				out = append(out, a.at.Sub(start), time.Duration(a.seq))
			}
		})
		return out
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Errorf("two runs from seed 7 differ (%d and %d values)", len(a), len(b))
	}
}
