package stream

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// A receive buffer of W packets, a sender the controller does not limit: the window's credit
// comes back every W/8 packets (flow.go), so the transfer runs at ≥ 80 % of window/RTT (the model
// says W/(RTT·(1 + 1/8)) = 89 %); UDT4's window-carrying ACK once per SYN allowed W per 10 ms.
func TestSmallRecvBufferWindowRate(t *testing.T) {
	for _, tc := range []struct {
		window int // packets: 45 is 64 KiB of 1456-byte payloads
		delay  time.Duration
	}{
		{45, time.Millisecond},
		{45, 100 * time.Microsecond},
		{200, time.Millisecond},
	} {
		t.Run(fmt.Sprintf("W=%d,RTT=%v", tc.window, 2*tc.delay), func(t *testing.T) {
			r := linkRules{delay: tc.delay}
			l := newLink(8, r, r)
			newPair(l, pairOpts{isnA: 1<<31 - 10, isnB: 4, recvBuf: tc.window, flow: tc.window,
				ccA: &fixedCC{period: time.Nanosecond}, ccB: &fixedCC{period: time.Nanosecond}})
			size := 8 << 20
			start := l.now
			transfer(t, l, size, false, time.Minute)
			el := l.now.Sub(start)
			got := float64(size) * 8 / el.Seconds()
			limit := float64(tc.window*l.ep[0].payloadSize) * 8 / (2 * tc.delay).Seconds()
			r1 := l.ep[1].Stats()
			t.Logf("%.0f Mbit/s, window/RTT %.0f Mbit/s (%.0f %%); receiver sent %d window updates, %d light ACKs, %d ACKs",
				got/1e6, limit/1e6, 100*got/limit, r1.WindowUpdates, r1.LightACKSent, r1.ACKSent)
			if got < 0.8*limit {
				t.Errorf("%.0f Mbit/s, want ≥ 80 %% of window/RTT = %.0f Mbit/s", got/1e6, limit/1e6)
			}
		})
	}
}

// A phase of small request/response messages leaves the sender with no receive-rate estimate
// (its arrivals followed the application's pauses: applimit.go), not one of a few packets per
// second; when the next bulk transfer's first loss ends the native controller's slow start, it
// takes its period from the window instead, at most (RTT + SYN)/16 = 3.75 ms here, where
// 1/RecvRate of that phase was 50–70 ms.
func TestRequestResponseLeavesNoRateEstimate(t *testing.T) {
	r := linkRules{delay: 25 * time.Millisecond}
	l := newLink(6, r, r)
	dropped := false
	l.rules[1].drop = func(b []byte) bool { // the server's second bulk packet is lost
		if b[0]&0x80 != 0 || dropped || binary.BigEndian.Uint32(b)-5 < 41 {
			return false
		}
		dropped = true
		return true
	}
	nat := congestion.NewNative()
	newPair(l, pairOpts{isnA: 100, isnB: 5, ccA: &fixedCC{}, ccB: nat})
	cli, srv := l.ep[0], l.ep[1]
	msg, buf := make([]byte, 64), make([]byte, 64<<10)
	wait := func(e *Endpoint, n int) {
		t.Helper()
		got := 0
		if !l.run([2]*app{}, l.now.Add(10*time.Second), func() bool {
			for e.CanRead() && got < n {
				k, err := e.Read(buf[:n-got])
				if err != nil || k == 0 {
					break
				}
				got += k
			}
			return got >= n
		}) {
			t.Fatalf("read %d of %d bytes", got, n)
		}
	}
	for range 40 {
		cli.Write(msg)
		wait(srv, len(msg))
		srv.Write(msg)
		wait(cli, len(msg))
	}
	if rr, bw := srv.measuredPeerRates(); rr != 0 || bw != 0 {
		t.Errorf("after request/response: receive rate %d, capacity %d packets/s told to the controller, want 0 (unknown)", rr, bw)
	}
	bulk := randomBytes(7, 2<<20)
	a := &app{rbuf: make([]byte, 64<<10)}
	b := &app{src: bulk, rbuf: make([]byte, 64<<10)}
	var period time.Duration // when slow start ended
	if !l.run([2]*app{a, b}, l.now.Add(time.Minute), func() bool {
		if period == 0 && !nat.SlowStart() {
			period = srv.Stats().SendPeriod
		}
		return len(a.dst) >= len(bulk)
	}) {
		t.Fatalf("bulk: %d of %d bytes", len(a.dst), len(bulk))
	}
	rr, _ := srv.measuredPeerRates()
	t.Logf("bulk after request/response: lost %v, period %v when slow start ended, %v at the end; receive rate now %d packets/s",
		dropped, period, srv.Stats().SendPeriod, rr)
	if !dropped || period == 0 {
		t.Fatal("the bulk transfer's loss did not end slow start")
	}
	if p := (50*time.Millisecond + SYN) / 16; period > p {
		t.Errorf("period %v when the loss ended slow start, want ≤ (RTT + SYN)/16 = %v", period, p)
	}
}

// Until a receive rate and capacity have been measured the controller is told 0 (unknown), not
// UDT4's pre-load (16 and 1 packets/s), which the 7/8 smoothing then starts from; after a pause
// for data a lower sample is ignored and a higher one counts.
func TestRatesUnknownUntilMeasured(t *testing.T) {
	l := newLink(1, linkRules{}, linkRules{})
	newPair(l, pairOpts{isnA: 1, isnB: 2})
	e := l.ep[0]
	if rr, bw := e.measuredPeerRates(); rr != 0 || bw != 0 || e.peerRates.RcvRate != 16 {
		t.Fatalf("before any ACK: %d, %d (pre-load %d)", rr, bw, e.peerRates.RcvRate)
	}
	e.foldPeerRates(1000, 8000, 9000)
	if rr, bw := e.measuredPeerRates(); rr != (7*16+8000)/8 || bw != (7*1+9000)/8 {
		t.Fatalf("after the first full ACK: %d, %d; want the 7/8 smoothing from 16 and 1", rr, bw)
	}
	e.pauseSeq, e.pauseSet = 2000, true
	rr0, bw0 := e.measuredPeerRates()
	e.foldPeerRates(2005, 100, 100)
	if rr, bw := e.measuredPeerRates(); rr != rr0 || bw != bw0 {
		t.Fatalf("a low sample after a pause changed the rates: %d, %d", rr, bw)
	}
	e.foldPeerRates(2006, 17000, 9800)
	if rr, bw := e.measuredPeerRates(); rr != (7*rr0+17000)/8 || bw != (7*bw0+9800)/8 {
		t.Fatalf("a higher sample after a pause was ignored: %d, %d", rr, bw)
	}
}
