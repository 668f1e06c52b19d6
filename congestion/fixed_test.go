package congestion

import (
	"testing"
	"time"
)

func TestFixedPeriod(t *testing.T) {
	for _, c := range []struct {
		bps    int64
		mss    int
		period time.Duration
	}{
		{500e6, 1500, 24 * time.Microsecond}, // 12 000 bit per packet
		{1e9, 1500, 12 * time.Microsecond},
		{10e9, 1500, 1200 * time.Nanosecond},
		{100e6, 1500, 120 * time.Microsecond},
		{12000, 1500, time.Second},
		{1, 1500, 12000 * time.Second},
		{1e9, 9000, 72 * time.Microsecond},
		{1e9, 0, 12 * time.Microsecond}, // MSS defaults to 1500
		{3e9, 1500, 4 * time.Microsecond},
		{7e9, 1500, 1714 * time.Nanosecond}, // 1714.29 ns, rounded
		{0, 1500, 0},                        // no rate limit
		{-5, 1500, 0},
	} {
		f := NewFixed(c.bps)
		f.Init(t0, Params{MSS: c.mss, FlowWindow: 25600})
		if s := f.State(); s.Period != c.period || s.Window != 25600 {
			t.Errorf("NewFixed(%d), MSS %d: State = %+v, want Period %v, Window 25600", c.bps, c.mss, s, c.period)
		}
	}
}

func TestFixedIgnoresEvents(t *testing.T) {
	f := NewFixed(1e9)
	f.Init(t0, Params{})
	want := State{Period: 12 * time.Microsecond, Window: NoWindowLimit}
	if s := f.State(); s != want {
		t.Fatalf("State = %+v, want %+v", s, want)
	}
	f.OnACK(ms(10), ACK{Seq: 5, RTT: time.Second, RecvRate: 1, Bandwidth: 1})
	f.OnLoss(ms(11), Loss{Ranges: []Range{{1, 4}}})
	f.OnTimeout(ms(12))
	f.OnPacketSent(ms(13), 6, 1500)
	f.OnPacketReceived(ms(13), 6, 1500)
	if s := f.State(); s != want {
		t.Errorf("State after events = %+v, want %+v", s, want)
	}
	if f.String() != "fixed:1Gbit/s" || f.Rate() != 1e9 {
		t.Errorf("String %q Rate %d", f.String(), f.Rate())
	}
}

func TestMinPeriod(t *testing.T) {
	for _, c := range []struct {
		bytesPerSec int64
		size        int
		want        time.Duration
	}{
		{12_500_000, 1500, 120 * time.Microsecond}, // 100 Mbit/s
		{125_000_000, 1500, 12 * time.Microsecond},
		{1500, 1500, time.Second},
		{3, 1000, 333333333333 * time.Nanosecond},
		{1, 1 << 30, 1 << 30 * time.Second},
		{0, 1500, 0},
		{-1, 1500, 0},
		{1000, 0, 0},
	} {
		if got := MinPeriod(c.bytesPerSec, c.size); got != c.want {
			t.Errorf("MinPeriod(%d, %d) = %v, want %v", c.bytesPerSec, c.size, got, c.want)
		}
	}
}

func TestWithMaxBandwidth(t *testing.T) {
	if c := NewNative(); WithMaxBandwidth(c, 0) != Controller(c) {
		t.Error("WithMaxBandwidth(c, 0) is not c")
	}
	n := NewNative()
	c := WithMaxBandwidth(n, 12_500_000) // 100 Mbit/s
	c.Init(t0, Params{MSS: 1500, FlowWindow: 16, ISN: isn})
	s := c.State()
	if s.Period != 120*time.Microsecond || s.Window != 16 || s.ACKPeriod != SYN {
		t.Errorf("capped slow start State = %+v, want Period 120µs, Window 16", s)
	}
	// A period above the cap is left alone; events reach the inner controller.
	c.OnTimeout(ms(1)) // leaves slow start: (RTT+SYN)/cwnd = 110 000/16 = 6875 µs
	if s := c.State(); s.Period != 6875*time.Microsecond || n.SlowStart() {
		t.Errorf("after timeout State = %+v, slow start %v", s, n.SlowStart())
	}
	if u, ok := c.(interface{ Unwrap() Controller }); !ok || u.Unwrap() != Controller(n) {
		t.Error("Unwrap does not return the inner controller")
	}
	if got := c.(interface{ String() string }).String(); got != "udt, max 12500000 bytes/s" {
		t.Errorf("String = %q", got)
	}
	// The cap follows the MSS given to Init; no rate limit becomes the cap.
	f := WithMaxBandwidth(NewFixed(0), 1_000_000)
	f.Init(t0, Params{MSS: 1000})
	if p := f.State().Period; p != time.Millisecond {
		t.Errorf("fixed unlimited under 1 MB/s at MSS 1000: Period %v, want 1ms", p)
	}
}
