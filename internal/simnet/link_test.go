package simnet

import (
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestDelayExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{Delay: 10 * time.Millisecond}, LinkConfig{Delay: 25 * time.Millisecond})
		defer p.Close()
		start := time.Now()
		send(t, p.A, p.B.LocalAddr(), 1, 100, 0)
		got := drain(t, p.B, time.Second)
		if len(got) != 1 || got[0].at.Sub(start) != 10*time.Millisecond {
			t.Fatalf("A→B arrivals %v, want one at +10ms", got)
		}
		if got[0].from.String() != PairAddrA {
			t.Errorf("from = %v, want %s", got[0].from, PairAddrA)
		}
		start = time.Now()
		send(t, p.B, p.A.LocalAddr(), 1, 100, 0)
		got = drain(t, p.A, time.Second)
		if len(got) != 1 || got[0].at.Sub(start) != 25*time.Millisecond {
			t.Fatalf("B→A arrivals %v, want one at +25ms", got)
		}
	})
}

func TestRateSerialisation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1500 bytes at 12 Mbit/s = 12000 bits / 12e6 bit/s = 1 ms each, plus 5 ms propagation.
		p := NewPair(1, LinkConfig{Rate: 12_000_000, Delay: 5 * time.Millisecond}, LinkConfig{})
		defer p.Close()
		start := time.Now()
		send(t, p.A, p.B.LocalAddr(), 3, 1500, 0)
		if q := p.AB.Stats(); q.QueuedPackets != 3 || q.QueuedBytes != 4500 {
			t.Errorf("queue right after the burst: %d packets %d bytes, want 3, 4500", q.QueuedPackets, q.QueuedBytes)
		}
		got := drain(t, p.B, time.Second)
		want := []time.Duration{6 * time.Millisecond, 7 * time.Millisecond, 8 * time.Millisecond}
		if len(got) != len(want) {
			t.Fatalf("got %d arrivals, want %d", len(got), len(want))
		}
		for i, a := range got {
			if d := a.at.Sub(start); d != want[i] || a.seq != uint32(i) {
				t.Errorf("packet %d (seq %d) at +%v, want seq %d at +%v", i, a.seq, d, i, want[i])
			}
		}
		// A packet sent when the link is idle again is not delayed by the earlier ones.
		time.Sleep(10 * time.Millisecond)
		start = time.Now()
		send(t, p.A, p.B.LocalAddr(), 1, 750, 0)
		got = drain(t, p.B, time.Second)
		if len(got) != 1 || got[0].at.Sub(start) != 5500*time.Microsecond {
			t.Fatalf("idle-link packet: %v, want +5.5ms", got)
		}
	})
}

func TestRateOverhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// (1472 + 28) bytes · 8 / 12 Mbit/s = 1 ms.
		p := NewPair(1, LinkConfig{Rate: 12_000_000, Overhead: 28}, LinkConfig{})
		defer p.Close()
		start := time.Now()
		send(t, p.A, p.B.LocalAddr(), 2, 1472, 0)
		got := drain(t, p.B, time.Second)
		if len(got) != 2 || got[0].at.Sub(start) != time.Millisecond || got[1].at.Sub(start) != 2*time.Millisecond {
			t.Fatalf("arrivals %v, want +1ms and +2ms", got)
		}
	})
}

func TestDropTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  LinkConfig
		want int
	}{
		{"packets", LinkConfig{Rate: 12_000_000, QueuePackets: 5}, 5},
		{"bytes", LinkConfig{Rate: 12_000_000, QueueBytes: 4 * 1500}, 4},
		{"both", LinkConfig{Rate: 12_000_000, QueueBytes: 4 * 1500, QueuePackets: 3}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := NewPair(1, tc.cfg, LinkConfig{})
				defer p.Close()
				send(t, p.A, p.B.LocalAddr(), 10, 1500, 0)
				// After 1 ms one packet has been serialised, so one more fits.
				time.Sleep(time.Millisecond)
				send(t, p.A, p.B.LocalAddr(), 2, 1500, 0)
				got := drain(t, p.B, time.Second)
				if len(got) != tc.want+1 {
					t.Fatalf("delivered %d, want %d", len(got), tc.want+1)
				}
				for i := range tc.want {
					if got[i].seq != uint32(i) {
						t.Fatalf("packet %d has seq %d: the tail must be dropped, not the head", i, got[i].seq)
					}
				}
				s := p.AB.Stats()
				if s.Sent != 12 || s.Delivered != uint64(tc.want+1) || s.DroppedQueue != uint64(11-tc.want) || s.Dropped() != s.DroppedQueue {
					t.Errorf("stats %+v", s)
				}
				if s.MaxQueuedBytes != tc.want*1500 {
					t.Errorf("MaxQueuedBytes = %d, want %d", s.MaxQueuedBytes, tc.want*1500)
				}
			})
		})
	}
}

func TestRandomLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10000
		run := func(seed uint64) []uint32 {
			p := NewPair(seed, LinkConfig{Loss: 0.05, Delay: time.Millisecond}, LinkConfig{})
			defer p.Close()
			var seqs []uint32
			for range n / 1000 {
				send(t, p.A, p.B.LocalAddr(), 1000, 64, 0)
				for _, a := range drain(t, p.B, 10*time.Millisecond) {
					seqs = append(seqs, a.seq)
				}
			}
			s := p.AB.Stats()
			if s.DroppedLoss+uint64(len(seqs)) != n || s.Delivered != uint64(len(seqs)) {
				t.Errorf("stats %+v do not add up to %d sent, %d received", s, n, len(seqs))
			}
			return seqs
		}
		a := run(42)
		lost := float64(n-len(a)) / n
		// Binomial(10000, 0.05): σ ≈ 0.0022; 4σ ≈ 0.009.
		if math.Abs(lost-0.05) > 0.009 {
			t.Errorf("loss rate %.4f, want 0.05 ± 0.009", lost)
		}
		if b := run(42); !slices.Equal(a, b) {
			t.Error("same seed, different losses: not reproducible")
		}
		if c := run(43); slices.Equal(a, c) {
			t.Error("different seeds, identical losses")
		}
	})
}

func TestGilbertElliott(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20000
		// Stationary Bad share 0.01/(0.01+0.25) ≈ 3.85 %; mean burst 4 packets.
		ge := &GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.25, LossBad: 1}
		p := NewPair(7, LinkConfig{Burst: ge}, LinkConfig{})
		defer p.Close()
		var got []arrival
		for range n / 1000 {
			send(t, p.A, p.B.LocalAddr(), 1000, 8, 0)
			got = append(got, drain(t, p.B, time.Millisecond)...)
		}
		lost := float64(n-len(got)) / n
		if math.Abs(lost-0.0385) > 0.012 {
			t.Errorf("loss rate %.4f, want ≈ 0.0385", lost)
		}
		bursts, run, prev := 0, 0, uint32(0)
		for i, a := range got {
			gap := int(a.seq) - int(prev) - 1
			if i == 0 {
				gap = int(a.seq)
			}
			if gap > 0 {
				bursts++
				run += gap
			}
			prev = a.seq
		}
		if mean := float64(run) / float64(bursts); mean < 3 || mean > 5 {
			t.Errorf("mean burst length %.2f packets, want ≈ 4", mean)
		}
	})
}

func TestBurstPattern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{BurstEvery: 10, BurstLen: 3}, LinkConfig{})
		defer p.Close()
		send(t, p.A, p.B.LocalAddr(), 30, 8, 0)
		var seqs []uint32
		for _, a := range drain(t, p.B, time.Millisecond) {
			seqs = append(seqs, a.seq)
		}
		want := []uint32{0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, 16, 20, 21, 22, 23, 24, 25, 26}
		if !slices.Equal(seqs, want) {
			t.Fatalf("received %v, want %v", seqs, want)
		}
		if s := p.AB.Stats(); s.DroppedLoss != 9 {
			t.Errorf("DroppedLoss = %d, want 9", s.DroppedLoss)
		}
	})
}

func TestReorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(3, LinkConfig{Delay: 5 * time.Millisecond, Reorder: 0.1, ReorderDelay: time.Millisecond}, LinkConfig{})
		defer p.Close()
		go send(t, p.A, p.B.LocalAddr(), 1000, 100, 100*time.Microsecond)
		got := drain(t, p.B, 50*time.Millisecond)
		if len(got) != 1000 {
			t.Fatalf("received %d, want 1000 (reordering must not lose)", len(got))
		}
		s := p.AB.Stats()
		if s.Reordered < 70 || s.Reordered > 130 {
			t.Errorf("Reordered = %d, want ≈ 100", s.Reordered)
		}
		if inv := inversions(got); inv < int(s.Reordered)*9/10 {
			t.Errorf("%d inversions for %d held-back packets", inv, s.Reordered)
		}
		// Each held packet arrives exactly 1 ms late.
		for _, a := range got {
			late := a.at.Sub(got[0].at) - time.Duration(a.seq)*100*time.Microsecond
			if late != 0 && late != time.Millisecond {
				t.Fatalf("seq %d arrived %v off schedule", a.seq, late)
			}
		}
	})
}

func TestJitter(t *testing.T) {
	for _, reorders := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			cfg := LinkConfig{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, JitterReorders: reorders}
			p := NewPair(5, cfg, LinkConfig{})
			defer p.Close()
			start := time.Now()
			go send(t, p.A, p.B.LocalAddr(), 500, 100, 100*time.Microsecond)
			got := drain(t, p.B, 50*time.Millisecond)
			if len(got) != 500 {
				t.Fatalf("received %d, want 500", len(got))
			}
			spread := map[time.Duration]bool{}
			for _, a := range got {
				d := a.at.Sub(start) - time.Duration(a.seq)*100*time.Microsecond
				if d < 10*time.Millisecond || d > 12*time.Millisecond {
					t.Fatalf("seq %d one-way delay %v outside [10ms, 12ms]", a.seq, d)
				}
				spread[d] = true
			}
			if len(spread) < 100 {
				t.Errorf("only %d distinct delays: jitter not applied", len(spread))
			}
			inv := inversions(got)
			if !reorders && inv != 0 {
				t.Errorf("FIFO jitter reordered %d packets", inv)
			}
			if reorders && inv < 50 {
				t.Errorf("reordering jitter gave only %d inversions", inv)
			}
		})
	}
}

func TestDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(9, LinkConfig{Delay: time.Millisecond, Duplicate: 0.1}, LinkConfig{})
		defer p.Close()
		send(t, p.A, p.B.LocalAddr(), 1000, 100, 0)
		got := drain(t, p.B, 10*time.Millisecond)
		s := p.AB.Stats()
		if s.Duplicated < 70 || s.Duplicated > 130 {
			t.Errorf("Duplicated = %d, want ≈ 100", s.Duplicated)
		}
		if len(got) != 1000+int(s.Duplicated) || s.Delivered != uint64(len(got)) {
			t.Fatalf("received %d, Delivered %d, want 1000 + %d", len(got), s.Delivered, s.Duplicated)
		}
		seen := map[uint32]int{}
		for _, a := range got {
			seen[a.seq]++
		}
		if len(seen) != 1000 {
			t.Errorf("%d distinct sequence numbers, want 1000", len(seen))
		}
	})
}

func TestMTUAndDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{MTU: 1000}, LinkConfig{})
		defer p.Close()
		send(t, p.A, p.B.LocalAddr(), 1, 1000, 0)
		send(t, p.A, p.B.LocalAddr(), 1, 1001, 0)
		if got := drain(t, p.B, time.Millisecond); len(got) != 1 || got[0].size != 1000 {
			t.Fatalf("MTU 1000: received %v", got)
		}
		p.AB.SetDown(true)
		send(t, p.A, p.B.LocalAddr(), 5, 10, 0)
		if got := drain(t, p.B, time.Millisecond); len(got) != 0 {
			t.Fatalf("down link delivered %d", len(got))
		}
		send(t, p.B, p.A.LocalAddr(), 1, 10, 0) // the other direction still works
		if got := drain(t, p.A, time.Millisecond); len(got) != 1 {
			t.Fatalf("reverse direction delivered %d, want 1", len(got))
		}
		p.AB.SetDown(false)
		send(t, p.A, p.B.LocalAddr(), 1, 10, 0)
		if got := drain(t, p.B, time.Millisecond); len(got) != 1 {
			t.Fatalf("restored link delivered %d, want 1", len(got))
		}
		s := p.AB.Stats()
		if s.DroppedMTU != 1 || s.DroppedDown != 5 || s.Delivered != 2 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestDownKeepsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{Delay: 10 * time.Millisecond}, LinkConfig{})
		defer p.Close()
		send(t, p.A, p.B.LocalAddr(), 1, 10, 0)
		p.AB.SetDown(true)
		if got := drain(t, p.B, 20*time.Millisecond); len(got) != 1 {
			t.Fatalf("in-flight packet lost by SetDown: got %d", len(got))
		}
	})
}

func TestSetConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{Delay: 10 * time.Millisecond}, LinkConfig{})
		defer p.Close()
		send(t, p.A, p.B.LocalAddr(), 1, 10, 0)
		p.AB.SetConfig(LinkConfig{Delay: time.Millisecond})
		if c := p.AB.Config(); c.Delay != time.Millisecond {
			t.Fatalf("Config().Delay = %v", c.Delay)
		}
		start := time.Now()
		send(t, p.A, p.B.LocalAddr(), 1, 10, 0)
		got := drain(t, p.B, 20*time.Millisecond)
		// The second packet may not overtake the first on a FIFO link: both arrive at +10 ms.
		if len(got) != 2 || got[0].seq != 0 || got[1].at.Sub(start) != 10*time.Millisecond {
			t.Fatalf("arrivals %v", got)
		}
	})
}
