package congestion_test

import (
	"fmt"
	"time"

	"github.com/udtgo/udt/congestion"
)

// aimd is a custom controller: a window-based AIMD in the style of TCP Reno's congestion
// avoidance. The window grows by one packet per window of acknowledged packets and halves on a
// loss report, at most once per RTT. It sets no rate (Period 0), so the window alone paces the
// sender.
type aimd struct {
	window  float64 // packets
	lastAck uint32  // the last ACK number
	rtt     time.Duration
	lastCut time.Time // the last decrease
}

func (c *aimd) Init(now time.Time, p congestion.Params) {
	*c = aimd{window: 16, lastAck: p.ISN, rtt: 100 * time.Millisecond}
}

func (c *aimd) OnACK(now time.Time, a congestion.ACK) {
	if a.RTT > 0 {
		c.rtt = a.RTT
	}
	acked := (a.Seq - c.lastAck) & 0x7FFFFFFF // 31-bit sequence numbers wrap
	if acked == 0 || acked >= 1<<30 {
		return // not an advance
	}
	c.lastAck = a.Seq
	c.window += float64(acked) / c.window
}

func (c *aimd) OnLoss(now time.Time, l congestion.Loss) {
	if now.Sub(c.lastCut) < c.rtt {
		return // one decrease per RTT
	}
	c.lastCut = now
	c.window = max(c.window/2, 2)
}

func (c *aimd) OnTimeout(now time.Time)                              { c.window = 2 }
func (c *aimd) OnPacketSent(now time.Time, seq uint32, size int)     {}
func (c *aimd) OnPacketReceived(now time.Time, seq uint32, size int) {}
func (c *aimd) State() congestion.State                              { return congestion.State{Window: c.window} }

// A custom controller implements the seven methods of Controller; a Factory hands a new one to
// each connection. Here it is driven by hand, as a connection would drive it.
func Example_customController() {
	var factory congestion.Factory = func() congestion.Controller { return new(aimd) }

	c := factory()
	t := time.Unix(0, 0)
	c.Init(t, congestion.Params{MSS: 1500, FlowWindow: 8192, ISN: 1000})
	fmt.Printf("start:     %.2f packets\n", c.State().Window)

	for i := 1; i <= 4; i++ {
		t = t.Add(20 * time.Millisecond)
		c.OnACK(t, congestion.ACK{Seq: 1000 + uint32(16*i), RTT: 20 * time.Millisecond})
	}
	fmt.Printf("4 ACKs:    %.2f packets\n", c.State().Window)

	c.OnLoss(t, congestion.Loss{Ranges: []congestion.Range{{First: 1070, Last: 1071}}})
	c.OnLoss(t.Add(time.Millisecond), congestion.Loss{Ranges: []congestion.Range{{First: 1075, Last: 1075}}})
	fmt.Printf("2 NAKs:    %.2f packets\n", c.State().Window)

	c.OnTimeout(t.Add(time.Second))
	fmt.Printf("timeout:   %.2f packets, period %v\n", c.State().Window, c.State().Period)
	// Output:
	// start:     16.00 packets
	// 4 ACKs:    19.68 packets
	// 2 NAKs:    9.84 packets
	// timeout:   2.00 packets, period 0s
}

// The native controller's life: slow start until the window passes the flow window, then a
// period from the receiver's arrival speed, decreases on loss reports.
func ExampleNewNative() {
	cc := congestion.NewNative()
	t := time.Unix(0, 0)
	cc.Init(t, congestion.Params{MSS: 1500, FlowWindow: 64, ISN: 0})
	show := func(what string) {
		s := cc.State()
		fmt.Printf("%-12s period %-9v window %5.1f slow start %v\n", what, s.Period, s.Window, cc.SlowStart())
	}
	show("init")
	for i, ack := range []uint32{16, 48, 100} {
		t = t.Add(congestion.SYN)
		cc.OnACK(t, congestion.ACK{Seq: ack, RTT: 20 * time.Millisecond, RecvRate: 5000, CurrSeq: ack + 16})
		show(fmt.Sprintf("ACK %d", i+1))
	}
	cc.OnLoss(t, congestion.Loss{Ranges: []congestion.Range{{First: 110, Last: 112}}, CurrSeq: 120})
	show("NAK")
	// Output:
	// init         period 1µs       window  16.0 slow start true
	// ACK 1        period 1µs       window  34.0 slow start true
	// ACK 2        period 199.96µs  window  67.0 slow start false
	// ACK 3        period 199.92µs  window 166.0 slow start false
	// NAK          period 225µs     window 166.0 slow start false
}

// udtperf's -cc flag: a name for ParseSpec.
func ExampleParseSpec() {
	factory, err := congestion.ParseSpec("fixed:500mbit")
	if err != nil {
		panic(err)
	}
	cc := factory()
	cc.Init(time.Time{}, congestion.Params{MSS: 1500, FlowWindow: 25600})
	fmt.Println(cc, cc.State().Period)

	_, err = congestion.ParseSpec("fixed:60MB")
	fmt.Println(err)
	// Output:
	// fixed:500Mbit/s 24µs
	// congestion: bad rate "60MB": want bit/s with an optional k, M, G or T prefix, e.g. 500mbit, 1gbit, 100m, 2.5Gbit
}

// The increase of spec §5.2 for MSS 1500: packets per SYN by spare capacity.
func ExampleIncrease() {
	for _, bits := range []float64{5e6, 50e6, 500e6, 5e9} {
		spare := bits / (1500 * 8) // packets/s
		fmt.Printf("%-9s %g\n", congestion.FormatRate(int64(bits)), congestion.Increase(spare, 1500))
	}
	// Output:
	// 5Mbit/s   0.01
	// 50Mbit/s  0.1
	// 500Mbit/s 1
	// 5Gbit/s   10
}

// Config.MaxBandwidth: cap any controller at a number of bytes/s.
func ExampleWithMaxBandwidth() {
	cc := congestion.WithMaxBandwidth(congestion.NewNative(), 12_500_000) // 100 Mbit/s
	cc.Init(time.Time{}, congestion.Params{MSS: 1500})
	fmt.Println(cc.State().Period) // slow start is unpaced (1 µs) but capped
	// Output: 120µs
}
