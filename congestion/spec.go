package congestion

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Factory makes a new Controller for each connection; a Controller is never shared between
// connections. conn's Config selects one per connection; a nil Factory means BBRFactory().
type Factory func() Controller

// MaxRate is the largest rate ParseRate accepts, 10^15 bit/s (1 Pbit/s).
const MaxRate = 1e15

// ParseSpec parses a controller name as given on a command line (udtperf's -cc flag) and returns
// its Factory:
//
//	bbr            the default, model-based controller, BBRFactory()
//	udt, native    UDT 4.11's native controller, NativeFactory()
//	fixed:RATE     a fixed-rate controller, FixedFactory(ParseRate(RATE)), e.g. fixed:500mbit
//
// Names are case-insensitive. The controllers' String methods print names ParseSpec accepts.
// Errors name the bad input and list the accepted forms.
func ParseSpec(s string) (Factory, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch strings.ToLower(name) {
	case "bbr":
		if hasArg {
			return nil, fmt.Errorf("congestion: controller %q takes no argument", s)
		}
		return BBRFactory(), nil
	case "udt", "native":
		if hasArg {
			return nil, fmt.Errorf("congestion: controller %q takes no argument", s)
		}
		return NativeFactory(), nil
	case "udt-lt":
		return nil, fmt.Errorf("congestion: controller %q was removed: BBR beat it on every path measured; bbr is the default (use bbr, or udt for the native algorithm)", s)
	case "fixed":
		if !hasArg {
			return nil, fmt.Errorf("congestion: controller %q needs a rate, e.g. fixed:500mbit", s)
		}
		r, err := ParseRate(arg)
		if err != nil {
			return nil, err
		}
		return FixedFactory(r), nil
	}
	return nil, fmt.Errorf("congestion: unknown controller %q (want bbr, udt or fixed:RATE)", s)
}

// rateUnits maps a lower-case unit suffix to its multiplier in bit/s.
var rateUnits = func() map[string]float64 {
	m := map[string]float64{}
	for p, mult := range map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12} {
		for _, unit := range []string{"", "bit", "bits", "bit/s", "bps"} {
			if p == "" && unit == "" {
				continue // a bare number is handled separately
			}
			m[p+unit] = mult
		}
	}
	m[""] = 1
	return m
}()

// ParseRate parses a rate in bit/s: a decimal number (digits and at most one point) followed by
// an optional SI prefix k, M, G or T (powers of 1000) and an optional unit bit, bits, bit/s or
// bps, case-insensitively: "500mbit", "1gbit", "100m", "2.5Gbit", "750Mbit/s", "10000000" and
// "1.5gbps" all work. Byte units (e.g. "MB") are rejected, so that a rate in bytes is never
// mistaken for one in bits. The result is rounded to the bit/s and must be in [1, MaxRate].
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := rateUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("congestion: bad rate %q: want bit/s with an optional k, M, G or T prefix, e.g. 500mbit, 1gbit, 100m, 2.5Gbit", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("congestion: bad rate %q: %v", s, err.(*strconv.NumError).Err)
	}
	v = math.Round(v * mult)
	if !(v >= 1 && v <= MaxRate) {
		return 0, fmt.Errorf("congestion: rate %q out of range: want 1 bit/s to 1 Pbit/s", s)
	}
	return int64(v), nil
}

// FormatRate formats bitsPerSecond with the largest SI prefix that keeps the number ≥ 1 and as
// many digits as needed to be exact: 500000000 → "500Mbit/s", 2500000000 → "2.5Gbit/s",
// 1234 → "1.234kbit/s". ParseRate(FormatRate(r)) == r for every r ParseRate can return.
func FormatRate(bitsPerSecond int64) string {
	v := float64(bitsPerSecond)
	for _, p := range []struct {
		prefix string
		mult   float64
	}{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if math.Abs(v) >= p.mult {
			return strconv.FormatFloat(v/p.mult, 'f', -1, 64) + p.prefix + "bit/s"
		}
	}
	return strconv.FormatInt(bitsPerSecond, 10) + "bit/s"
}
