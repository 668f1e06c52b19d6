package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Config describes one emulated path A ⇄ R ⇄ B.
type Config struct {
	// Rate is the bottleneck rate in bit/s of IP packets (the 14-byte Ethernet
	// header is not counted), applied by tbf on the router toward each host.
	// 0 means unshaped (the delay line's ceiling is then the limit).
	Rate int64
	// RTT is the round-trip propagation delay added by the delay line; each
	// direction is held for RTT/2.
	RTT time.Duration
	// Loss is the probability in percent (0–100) that the router drops a
	// forwarded packet, independently per packet and per direction.
	Loss float64
	// Queue is the tbf buffer toward each host, as time at Rate. 0 selects
	// max(RTT, 20 ms): one bandwidth-delay product, and at short RTTs enough
	// to absorb a host's TSO bursts (with 5 ms, TCP at RTT 0 loses 8 % of
	// its packets at the queue and reaches only ~88 % of the rate).
	Queue time.Duration
	// MTU is the MTU in bytes of the link between the router and host B (both ends). A's link
	// stays at 1500, so A's path MTU to B is found only by path MTU discovery: the router
	// answers larger packets from A with ICMP "fragmentation needed" (RFC 1191). B knows its own
	// link's MTU. 0 means 1500, the same as everywhere.
	MTU int
	// BlackHole makes the router drop the ICMP "fragmentation needed" messages it would send for
	// packets above MTU: a path MTU black hole (RFC 8899 §4.3).
	BlackHole bool
}

// lossScale is the modulus of the nftables numgen used for loss: loss is
// expressed in units of 1/lossScale (0.001 %).
const lossScale = 100000

// LossThreshold returns the numgen threshold K such that a packet is dropped
// when (random mod lossScale) < K.
func (c Config) LossThreshold() int64 {
	return int64(c.Loss/100*lossScale + 0.5)
}

// QueueBytes returns the tbf limit in bytes: Queue (or its default) at Rate,
// at least 3 full-size packets.
func (c Config) QueueBytes() int64 {
	q := c.Queue
	if q == 0 {
		q = max(c.RTT, 20*time.Millisecond)
	}
	b := int64(float64(c.Rate) / 8 * q.Seconds())
	return max(b, 3*1514)
}

// BurstBytes returns the tbf bucket size in bytes: 1 ms at Rate, at least two
// full-size packets (tbf needs burst ≥ MTU; a larger bucket lets bursts pass
// the shaper at wire speed).
func (c Config) BurstBytes() int64 {
	return max(c.Rate/8/1000, 2*1514)
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Rate < 0:
		return errors.New("rate must be ≥ 0")
	case c.Rate > 0 && c.Rate < 100_000:
		return errors.New("rate must be 0 (unshaped) or ≥ 100kbit")
	case c.RTT < 0 || c.RTT > 10*time.Second:
		return errors.New("rtt must be in [0, 10s]")
	case c.Loss < 0 || c.Loss > 100:
		return errors.New("loss must be a percentage in [0, 100]")
	case c.Queue < 0:
		return errors.New("queue must be ≥ 0")
	case c.MTU != 0 && (c.MTU < 576 || c.MTU > 1500):
		return errors.New("mtu must be 0 (1500) or in [576, 1500]")
	}
	return nil
}

func (c Config) String() string {
	rate := "unshaped"
	if c.Rate > 0 {
		rate = formatRate(c.Rate)
	}
	mtu := ""
	if c.MTU > 0 {
		mtu = fmt.Sprintf(", mtu %d", c.MTU)
		if c.BlackHole {
			mtu += " (ICMP filtered)"
		}
	}
	return fmt.Sprintf("rate %s, rtt %v, loss %g %%%s", rate, c.RTT, c.Loss, mtu)
}

// ParseRate parses a rate in tc notation: a number with an optional suffix
// bit, kbit, mbit, gbit (powers of 1000) or bps, kbps, mbps, gbps (bytes/s),
// case-insensitive; a bare number is bit/s. It returns bit/s.
func ParseRate(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mult   float64
	}{
		{"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3}, {"bps", 8},
		{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1e12 {
		return 0, fmt.Errorf("bad rate %q (want e.g. 100mbit, 1gbit, 0 for unshaped)", s)
	}
	return int64(v * mult), nil
}

// formatRate prints bit/s compactly in tc's decimal units.
func formatRate(bps int64) string {
	switch {
	case bps >= 1e9 && bps%1e6 == 0:
		return strconv.FormatFloat(float64(bps)/1e9, 'g', -1, 64) + "gbit"
	case bps >= 1e6:
		return strconv.FormatFloat(float64(bps)/1e6, 'g', -1, 64) + "mbit"
	case bps >= 1e3:
		return strconv.FormatFloat(float64(bps)/1e3, 'g', -1, 64) + "kbit"
	}
	return strconv.FormatInt(bps, 10) + "bit"
}
