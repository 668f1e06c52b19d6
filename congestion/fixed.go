package congestion

import (
	"fmt"
	"math"
	"time"
)

// NoWindowLimit is the Window a controller reports when it sets no congestion window: 2^30
// packets, the largest window 31-bit sequence numbers can order (spec §1.6). The sender is then
// limited by the flow window alone.
const NoWindowLimit = 1 << 30

// Fixed is a fixed-rate controller for benchmarks and tests: it sends one packet every
// MSS·8/rate seconds whatever the network says, and sets no congestion window beyond the flow
// window. It ignores every event.
//
// The rate counts whole IP datagrams of MSS bytes (Params.MSS: IP and UDP headers included, 1500
// by default), not the UDT payload: that is the unit in which a bottleneck link is specified and
// in which UDT_MAXBW is applied (spec §5.5), so NewFixed(r) and WithMaxBandwidth(c, r/8) give the
// same period. The application's goodput at full-size packets is then rate·(MSS−44)/MSS
// (97.1 % at MSS 1500: 28 bytes of IPv4+UDP headers and 16 of UDT header). Over IPv6 the real
// datagram is 20 bytes larger than conn's MSS−28 payload (spec §9.6.6); the period still counts
// MSS bytes.
//
// Window is Params.FlowWindow (NoWindowLimit if that is not set or larger), so the effective window
// min(Window, flow window) is the flow window. Like all controllers, a Fixed is used by one
// connection at a time.
type Fixed struct {
	bps    int64 // bit/s; ≤ 0: no rate limit
	mss    int   // bytes
	window float64
}

// NewFixed returns a controller that sends at bitsPerSecond bit/s, counted in MSS-byte datagrams
// (see Fixed). bitsPerSecond ≤ 0 means no rate limit (Period 0): only the flow window applies.
func NewFixed(bitsPerSecond int64) *Fixed {
	f := &Fixed{bps: bitsPerSecond}
	f.Init(time.Time{}, Params{})
	return f
}

// FixedFactory returns a Factory of fixed-rate controllers at bitsPerSecond bit/s (see NewFixed).
func FixedFactory(bitsPerSecond int64) Factory {
	return func() Controller { return NewFixed(bitsPerSecond) }
}

// Init records the MSS (≤ 0 selects 1500 bytes) and the flow window.
func (f *Fixed) Init(now time.Time, p Params) {
	f.mss = defaultMSS
	if p.MSS > 0 {
		f.mss = p.MSS
	}
	f.window = NoWindowLimit
	if p.FlowWindow > 0 && p.FlowWindow < NoWindowLimit {
		f.window = float64(p.FlowWindow)
	}
}

// OnACK does nothing.
func (f *Fixed) OnACK(now time.Time, a ACK) {}

// OnLoss does nothing.
func (f *Fixed) OnLoss(now time.Time, l Loss) {}

// OnTimeout does nothing.
func (f *Fixed) OnTimeout(now time.Time) {}

// OnPacketSent does nothing.
func (f *Fixed) OnPacketSent(now time.Time, seq uint32, size int) {}

// OnPacketReceived does nothing.
func (f *Fixed) OnPacketReceived(now time.Time, seq uint32, size int) {}

// State returns Period = MSS·8/rate (rounded to the ns; 0 without a rate) and Window = the flow
// window.
func (f *Fixed) State() State {
	return State{Period: perPacket(float64(f.mss)*8, f.bps), Window: f.window}
}

// Rate returns the configured rate in bit/s.
func (f *Fixed) Rate() int64 { return f.bps }

// String returns "fixed:RATE", e.g. "fixed:500Mbit/s", which ParseSpec accepts.
func (f *Fixed) String() string { return "fixed:" + FormatRate(f.bps) }

// PacketPairs reports false (PacketPairer): a fixed rate reads no capacity estimate, and a pair's
// back-to-back second packet would be the only departure off the schedule.
func (f *Fixed) PacketPairs() bool { return false }

// MinPeriod returns the packet send period that keeps a sender of packetSize-byte packets at or
// below bytesPerSec bytes/s: packetSize·10^9/bytesPerSec ns, rounded to the ns (spec §5.5:
// "interval ≥ 10^6 / (MAXBW / MSS) µs"). It returns 0 (no limit) if bytesPerSec or packetSize
// is ≤ 0.
func MinPeriod(bytesPerSec int64, packetSize int) time.Duration {
	return perPacket(float64(packetSize), bytesPerSec)
}

// perPacket returns the time one packet of size units takes at rate units per second, rounded to
// the ns; 0 if either is ≤ 0.
func perPacket(size float64, rate int64) time.Duration {
	if size <= 0 || rate <= 0 {
		return 0
	}
	ns := math.Round(size * 1e9 / float64(rate))
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// WithMaxBandwidth returns c with its sending rate capped at bytesPerSec bytes/s, counted in
// MSS-byte packets as UDT_MAXBW is (spec §5.5): every State it reports has
// Period ≥ MinPeriod(bytesPerSec, Params.MSS); a Period of 0 (no limit) becomes that minimum. All
// events go to c unchanged. (conn applies Config.MaxBandwidth itself, as the same floor on the
// send period; this wrapper is for a controller used on its own.)
//
// If c is a DeliveryController, so is the result. If bytesPerSec ≤ 0 it returns c itself. The returned Controller also has Unwrap() Controller,
// which returns c (e.g. to read a *Native's SlowStart).
func WithMaxBandwidth(c Controller, bytesPerSec int64) Controller {
	if bytesPerSec <= 0 {
		return c
	}
	m := &maxBandwidth{Controller: c, bps: bytesPerSec}
	m.min = MinPeriod(bytesPerSec, defaultMSS)
	if d, ok := c.(DeliveryController); ok {
		return &maxBandwidthDelivery{maxBandwidth: m, d: d}
	}
	return m
}

// maxBandwidthDelivery is the wrapper of a DeliveryController: it forwards OnDelivery too.
type maxBandwidthDelivery struct {
	*maxBandwidth
	d DeliveryController
}

func (m *maxBandwidthDelivery) OnDelivery(now time.Time, d Delivery) { m.d.OnDelivery(now, d) }

// maxBandwidth is the wrapper WithMaxBandwidth returns.
type maxBandwidth struct {
	Controller
	bps int64         // bytes/s
	min time.Duration // the period for bps at the connection's MSS
}

func (m *maxBandwidth) Init(now time.Time, p Params) {
	mss := p.MSS
	if mss <= 0 {
		mss = defaultMSS
	}
	m.min = MinPeriod(m.bps, mss)
	m.Controller.Init(now, p)
}

func (m *maxBandwidth) State() State {
	s := m.Controller.State()
	if s.Period < m.min {
		s.Period = m.min
	}
	return s
}

// Unwrap returns the capped controller.
func (m *maxBandwidth) Unwrap() Controller { return m.Controller }

func (m *maxBandwidth) String() string {
	return fmt.Sprintf("%s, max %d bytes/s", name(m.Controller), m.bps)
}

// name returns c's String if it has one, else its type.
func name(c Controller) string {
	if s, ok := c.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", c)
}
