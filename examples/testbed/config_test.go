package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"100mbit", 100_000_000, true},
		{"100Mbit", 100_000_000, true},
		{"1gbit", 1_000_000_000, true},
		{"1.5gbit", 1_500_000_000, true},
		{"500kbit", 500_000, true},
		{"12500", 12500, true},
		{"10mbps", 80_000_000, true},
		{"0", 0, true},
		{"", 0, false},
		{"fast", 0, false},
		{"-1mbit", 0, false},
		{"2000gbit", 0, false},
	} {
		got, err := ParseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for in, want := range map[int64]string{100e6: "100mbit", 1e9: "1gbit", 1.5e9: "1.5gbit", 500e3: "500kbit", 12: "12bit"} {
		if got := formatRate(in); got != want {
			t.Errorf("formatRate(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigDerived(t *testing.T) {
	c := Config{Rate: 100e6, RTT: 100 * time.Millisecond, Loss: 1}
	if got := c.QueueBytes(); got != 1_250_000 {
		t.Errorf("QueueBytes = %d, want one BDP 1250000", got)
	}
	if got := (Config{Rate: 100e6}).QueueBytes(); got != 250_000 {
		t.Errorf("QueueBytes at RTT 0 = %d, want 20 ms = 250000", got)
	}
	if got := (Config{Rate: 100e6, Queue: 50 * time.Millisecond}).QueueBytes(); got != 625_000 {
		t.Errorf("QueueBytes with -queue 50ms = %d", got)
	}
	if got := (Config{Rate: 1e6}).QueueBytes(); got != 3*1514 {
		t.Errorf("QueueBytes floor = %d", got)
	}
	if got := c.BurstBytes(); got != 12500 {
		t.Errorf("BurstBytes = %d, want 1 ms at rate", got)
	}
	if got := (Config{Rate: 1e6}).BurstBytes(); got != 2*1514 {
		t.Errorf("BurstBytes floor = %d", got)
	}
	for loss, want := range map[float64]int64{1: 1000, 0.1: 100, 0: 0, 100: 100000, 0.0004: 0, 0.0006: 1} {
		if got := (Config{Loss: loss}).LossThreshold(); got != want {
			t.Errorf("LossThreshold(%g) = %d, want %d", loss, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Rate: 100e6, RTT: 100 * time.Millisecond, Loss: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Config{
		{Rate: -1}, {Rate: 50_000}, {RTT: -time.Millisecond}, {RTT: 11 * time.Second},
		{Loss: -0.1}, {Loss: 101}, {Queue: -1},
	} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-rate", "50mbit", "-rtt", "20ms", "-loss", "0.1", "--", "srv", "-x", "--", "cli", "{B}"})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Rate != 50e6 || o.cfg.RTT != 20*time.Millisecond || o.cfg.Loss != 0.1 {
		t.Errorf("cfg = %+v", o.cfg)
	}
	if strings.Join(o.server, " ") != "srv -x" || strings.Join(o.client, " ") != "cli {B}" {
		t.Errorf("server %q client %q", o.server, o.client)
	}
	o, err = parseFlags([]string{"--", "ping", "-c", "1", "{B}"})
	if err != nil || o.server != nil || strings.Join(o.client, " ") != "ping -c 1 {B}" {
		t.Errorf("single command: %+v %v", o, err)
	}
	for _, bad := range [][]string{
		{"-rate", "x"}, {"-loss", "200"}, {"stray"}, {"--", "a", "--"}, {"-measure", "some"},
		{"-matrix", "--", "cmd"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) = nil error", bad)
		}
	}
}

func TestPrefixWriter(t *testing.T) {
	var b bytes.Buffer
	w := prefixWriter(&b, "B| ")
	w.Write([]byte("one\ntw"))
	w.Write([]byte("o\n\nthree"))
	if got, want := b.String(), "B| one\nB| two\nB| \nB| three"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPlotOnlyWhenAsked: the matrix writes a plot only where -plot says (it wrote
// testbed-matrix.png into the working directory unasked).
func TestPlotOnlyWhenAsked(t *testing.T) {
	o, err := parseFlags([]string{"-matrix"})
	if err != nil {
		t.Fatal(err)
	}
	if o.matrix.plot != "" {
		t.Errorf("-matrix plots to %q by default", o.matrix.plot)
	}
	if o, _ := parseFlags([]string{"-matrix", "-plot", "m.svg"}); o.matrix.plot != "m.svg" {
		t.Errorf("-plot m.svg: %q", o.matrix.plot)
	}
}
