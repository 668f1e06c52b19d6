package simnet

import (
	"testing"
	"testing/synctest"
	"time"
)

// A token bucket of 3 packets passes a burst's first 3 packets at once, then one per packet
// time; after an idle spell (drain's idle second) refills it, the next burst again passes 3 at once.
func TestTokenBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1500 bytes at 12 Mbit/s = 1 ms of tokens each; the bucket holds 3 of them.
		p := NewPair(1, LinkConfig{Rate: 12_000_000, BucketBytes: 4500, Delay: 5 * time.Millisecond}, LinkConfig{})
		defer p.Close()
		for round := range 2 {
			start := time.Now()
			send(t, p.A, p.B.LocalAddr(), 6, 1500, 0)
			got := drain(t, p.B, time.Second)
			ms := time.Millisecond
			want := []time.Duration{5 * ms, 5 * ms, 5 * ms, 6 * ms, 7 * ms, 8 * ms}
			if len(got) != len(want) {
				t.Fatalf("round %d: got %d arrivals, want %d", round, len(got), len(want))
			}
			for i, a := range got {
				if d := a.at.Sub(start); d != want[i] || a.seq != uint32(i) {
					t.Errorf("round %d: packet %d (seq %d) at +%v, want +%v", round, i, a.seq, d, want[i])
				}
			}
		}
	})
}

// The shaper keeps the long-run rate, and the drop-tail queue holds the packets waiting for
// tokens: of 100 packets sent back to back, the bucket's 2 pass at once, 50 wait and leave one
// per packet time, the other 48 are dropped.
func TestTokenBucketRateAndQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{Rate: 12_000_000, BucketBytes: 3000, QueuePackets: 50}, LinkConfig{})
		defer p.Close()
		start := time.Now()
		send(t, p.A, p.B.LocalAddr(), 100, 1500, 0)
		got := drain(t, p.B, time.Second)
		if st := p.AB.Stats(); st.DroppedQueue != 48 {
			t.Errorf("queue drops %d, want 48", st.DroppedQueue)
		}
		if len(got) != 52 {
			t.Fatalf("got %d arrivals, want 52", len(got))
		}
		if d := got[51].at.Sub(start); d != 50*time.Millisecond {
			t.Errorf("last arrival at +%v, want +50ms (2 at once, then 1 per ms)", d)
		}
	})
}
