//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Check is one line of the self-measurement: a quantity set and measured.
type Check struct {
	Name      string
	Set       string
	Measured  string
	Tolerance string
	OK        bool
	Skipped   bool // not checkable at this setting (e.g. unshaped rate)
}

// measurePlan sizes the self-measurement.
type measurePlan struct {
	pings        int
	tcpDur       time.Duration
	tcpWarmup    time.Duration
	maxProbes    int
	probeSeconds float64 // upper bound on the probe run
}

func planFor(mode string, rtt time.Duration, tool string) measurePlan {
	// Warm-up: the built-in runner clamps the window (linkWindow), so slow
	// start ends without loss within ~10 RTTs. iperf3 cannot clamp it: its
	// slow start overshoots into the queue and the loss episode that follows
	// lasts a few dozen RTTs at 100 Mbit/s.
	warm := max(time.Second, 20*rtt)
	if tool == "iperf3" {
		warm = max(2*time.Second, 50*rtt)
	}
	if mode == "quick" {
		return measurePlan{pings: 20, tcpDur: warm + 4*time.Second, tcpWarmup: warm, maxProbes: 40000, probeSeconds: 2}
	}
	return measurePlan{pings: 40, tcpDur: warm + 7*time.Second, tcpWarmup: warm, maxProbes: 100000, probeSeconds: 5}
}

// SelfMeasure measures the link as configured and returns one Check per
// quantity: ping RTT (median, ±5 % or ±0.5 ms whichever is larger), TCP
// rate at 0 % loss (loss is switched off meanwhile; the IP-level rate of the
// bulk transfer, goodput × MTU/MSS, within ±5 % of -rate, which counts IP
// bytes too; the goodput is printed beside it) and
// one-way UDP loss (±30 % relative; at 0 % at most 0.01 %; no probe may
// arrive out of order).
func SelfMeasure(ctx context.Context, tb *Testbed, mode, tcpTool string, log io.Writer) ([]Check, error) {
	tcpTool = resolveTCPTool(tcpTool)
	p := planFor(mode, tb.RTT, tcpTool)
	var checks []Check

	fmt.Fprintf(log, "measuring: %d pings, TCP %v, UDP loss probes…\n", p.pings, p.tcpDur)
	med, mean, replies, err := PingRTT(ctx, tb, p.pings)
	if err != nil {
		return checks, err
	}
	tol := max(0.05*float64(tb.RTT), float64(500*time.Microsecond))
	checks = append(checks, Check{
		Name:      fmt.Sprintf("ping RTT (median of %d)", replies),
		Set:       fmtDur(tb.RTT),
		Measured:  fmt.Sprintf("%s (mean %s)", fmtDur(med), fmtDur(mean)),
		Tolerance: "±5 % / 0.5 ms",
		OK:        math.Abs(float64(med-tb.RTT)) <= tol,
	})

	loss := tb.Loss
	if loss > 0 {
		if err := tb.SetLoss(ctx, 0); err != nil {
			return checks, err
		}
	}
	tr, tool, err := LinkRate(ctx, tb, tcpTool, "cubic", p.tcpDur, p.tcpWarmup)
	if loss > 0 {
		if lerr := tb.SetLoss(ctx, loss); lerr != nil && err == nil {
			err = lerr
		}
	}
	if err != nil {
		return checks, err
	}
	ip := tr.IPRate()
	c := Check{
		Name:      "TCP rate at 0 % loss (" + tool + ")",
		Set:       "unshaped",
		Measured:  fmt.Sprintf("%.2f Mbit/s (goodput %.2f, retr %.2f %%)", ip/1e6, tr.Goodput/1e6, tr.RetransPct),
		Tolerance: "±5 %",
	}
	if tb.Rate > 0 {
		c.Set = fmt.Sprintf("%.2f Mbit/s", float64(tb.Rate)/1e6)
		c.OK = math.Abs(ip-float64(tb.Rate)) <= 0.05*float64(tb.Rate)
	} else {
		c.Skipped, c.Tolerance = true, "n/a"
	}
	checks = append(checks, c)

	n, pps := probePlan(tb.Config, p)
	lp, reordered, err := ProbeLoss(ctx, tb, n, pps)
	if err != nil {
		return checks, err
	}
	c = Check{
		Name:     fmt.Sprintf("loss A→B (%d UDP probes)", n),
		Set:      fmt.Sprintf("%.3f %%", tb.Loss),
		Measured: fmt.Sprintf("%.3f %%, %d reordered", lp, reordered),
	}
	if tb.Loss > 0 {
		c.Tolerance = "±30 % rel."
		c.OK = math.Abs(lp-tb.Loss) <= 0.3*tb.Loss
	} else {
		c.Tolerance = "≤ 0.01 %"
		c.OK = lp <= 0.01
	}
	c.Tolerance += ", in order"
	c.OK = c.OK && reordered == 0
	checks = append(checks, c)
	return checks, nil
}

// probePlan picks the probe count and rate: about 400 expected losses (so
// ±30 % is several standard deviations) within the plan's time and 20 % of
// the link rate, between 10 000 and maxProbes probes.
func probePlan(c Config, p measurePlan) (n, pps int) {
	pps = 20000
	if c.Rate > 0 {
		wire := float64(probeSize+28) * 8
		pps = min(pps, int(0.2*float64(c.Rate)/wire))
	}
	pps = max(pps, 100)
	n = 10000
	if c.Loss > 0 {
		n = int(400 / (c.Loss / 100))
	}
	n = min(max(n, 10000), p.maxProbes, int(float64(pps)*p.probeSeconds))
	return n, pps
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// printChecks prints the self-measurement table; it returns false if any
// checkable quantity is out of tolerance.
func printChecks(w io.Writer, checks []Check) bool {
	all := true
	wn, ws, wm := len("self-measurement"), len("set"), len("measured")
	for _, c := range checks {
		wn, ws, wm = max(wn, utf8.RuneCountInString(c.Name)), max(ws, utf8.RuneCountInString(c.Set)), max(wm, utf8.RuneCountInString(c.Measured))
	}
	line := func(n, s, m, t, ok string) {
		pad := func(x string, w int) string { return x + strings.Repeat(" ", w-utf8.RuneCountInString(x)) }
		fmt.Fprintf(w, "%s  %s  %s  %s  %s\n", pad(n, wn), pad(s, ws), pad(m, wm), pad(t, 22), ok)
	}
	line("self-measurement", "set", "measured", "tolerance", "ok")
	for _, c := range checks {
		ok := "yes"
		switch {
		case c.Skipped:
			ok = "-"
		case !c.OK:
			ok, all = "NO", false
		}
		line(c.Name, c.Set, c.Measured, c.Tolerance, ok)
	}
	return all
}
