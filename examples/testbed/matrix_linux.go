//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// transferRunner moves data A→B for a duration across a testbed and returns
// the protocol-specific part of a Row (goodput, retransmissions, digest).
type transferRunner interface {
	Run(ctx context.Context, tb *Testbed, dur time.Duration) (Row, error)
}

// tcpRunner is the built-in TCP sender/receiver with one congestion control.
type tcpRunner struct{ cc string }

func (r tcpRunner) Run(ctx context.Context, tb *Testbed, dur time.Duration) (Row, error) {
	// No warm-up exclusion: like udtperf, the whole transfer counts.
	res, err := RunTCP(ctx, tb, r.cc, dur, 0, 0)
	return Row{GoodputMbps: res.Goodput / 1e6, RetransPct: res.RetransPct, SHA256OK: res.SHA256OK,
		Seconds: res.MeasuredFor.Seconds()}, err
}

// unavailable is a runner for a protocol that cannot run here.
type unavailable struct{ err error }

func (u unavailable) Run(context.Context, *Testbed, time.Duration) (Row, error) { return Row{}, u.err }

// ensureCC makes TCP congestion control cc available (modprobe tcp_<cc>).
func ensureCC(cc string) error {
	has := func() bool {
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
		return err == nil && slices.Contains(strings.Fields(string(b)), cc)
	}
	if has() {
		return nil
	}
	out, err := exec.Command("modprobe", "tcp_"+cc).CombinedOutput()
	if has() {
		return nil
	}
	return fmt.Errorf("TCP %s not available in this kernel (modprobe tcp_%s: %v %s)", cc, cc, err, strings.TrimSpace(string(out)))
}

// matrixRunners returns a runner per protocol; protocols that cannot run
// get one that reports why.
func matrixRunners(ctx context.Context, o *options, protos []string, tmp string) map[string]transferRunner {
	runners := map[string]transferRunner{}
	var bin string
	var binErr error
	for _, p := range protos {
		switch p {
		case protoTCPCubic:
			runners[p] = tcpRunner{"cubic"}
		case protoTCPBBR:
			if err := ensureCC("bbr"); err != nil {
				runners[p] = unavailable{err}
			} else {
				runners[p] = tcpRunner{"bbr"}
			}
		case protoUDT, protoUDTNative, protoQUIC:
			if bin == "" && binErr == nil {
				if bin = o.matrix.udtperf; bin == "" {
					fmt.Fprintln(o.stderr, "testbed: building examples/udtperf…")
					bin, binErr = buildUdtperf(ctx, tmp)
				}
			}
			if binErr != nil {
				runners[p] = unavailable{binErr}
			} else {
				runners[p] = udtperfRunner{bin: bin, proto: p, pacer: o.matrix.pacer, tolerance: o.matrix.tolerance, traceDir: o.matrix.traceDir}
			}
		}
	}
	return runners
}

// runMatrix measures the link, then runs every protocol over every scenario
// on a fresh testbed per scenario, and prints the table, JSON and plot.
func runMatrix(ctx context.Context, o *options) (int, error) {
	protos, err := selectProtocols(o.matrix.protocols, o.matrix.quick)
	if err != nil {
		return 2, err
	}
	if d := o.matrix.traceDir; d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 1, fmt.Errorf("-trace-dir: %v", err)
		}
	}
	tmp, err := os.MkdirTemp("", "testbed-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	runners := matrixRunners(ctx, o, protos, tmp)
	scs := scenarios(o.matrix.quick)
	table := o.stdout
	if o.matrix.json {
		table = o.stderr // stdout carries only the JSON document
	}

	// The link's own measurement first, at the headline setting.
	head := headScenario(scs)
	mode := "full"
	if o.matrix.quick {
		mode = "quick"
	}
	if err := measureLink(ctx, Config{Rate: head.Rate, RTT: head.RTT, Loss: head.Loss, Queue: o.cfg.Queue}, mode, o.tcpTool, table, o.stderr); err != nil {
		return 1, interrupted(ctx, err)
	}

	var rows []Row
	bad := false
	for _, sc := range scs {
		cfg := Config{Rate: sc.Rate, RTT: sc.RTT, Loss: sc.Loss, Queue: o.cfg.Queue, MTU: sc.MTU}
		scRows, err := runScenario(ctx, cfg, sc, protos, runners, o.matrix.duration, o.matrix.runs, o.stderr)
		rows = append(rows, scRows...)
		if err != nil {
			return 1, interrupted(ctx, err)
		}
	}
	for _, r := range rows {
		bad = bad || r.Error != "" || !r.SHA256OK
	}
	fmt.Fprintln(table)
	printTable(table, rows)
	if o.matrix.json {
		if err := writeJSON(o.stdout, rows); err != nil {
			return 1, err
		}
	}
	if o.matrix.plot != "" && o.matrix.plot != "none" {
		if err := writePlot(o.matrix.plot, rows); err != nil {
			return 1, err
		}
		fmt.Fprintln(o.stderr, "testbed: plot written to", o.matrix.plot)
	}
	if bad {
		return 1, fmt.Errorf("some transfers failed or did not verify (see the table)")
	}
	return 0, nil
}

// measureLink builds a testbed, prints its full self-measurement and removes
// it.
func measureLink(ctx context.Context, cfg Config, mode, tcpTool string, w, log io.Writer) error {
	tb, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()
	ctx = tb.Context()
	fmt.Fprintf(w, "link self-measurement at %s:\n", tb.Config)
	checks, err := SelfMeasure(ctx, tb, mode, tcpTool, log)
	if err != nil {
		return tb.explain(err)
	}
	if !printChecks(w, checks) {
		fmt.Fprintln(w, "WARNING: the link is out of tolerance; the matrix below is suspect")
	}
	if st, err := tb.DelayStats(); err == nil && st.StallNote() != "" {
		fmt.Fprintln(w, "note:", st.StallNote())
	}
	return nil
}

// runScenario builds the testbed for one scenario, checks its RTT and loss
// quickly, and runs each protocol. Transfer errors go into the rows; the
// returned error is for the testbed itself or an interrupt.
func runScenario(ctx context.Context, cfg Config, sc Scenario, protos []string, runners map[string]transferRunner, dur time.Duration, nruns int, log io.Writer) ([]Row, error) {
	tb, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	ctx = tb.Context() // cancelled as soon as the delay line or a namespace dies
	med, _, _, err := PingRTT(ctx, tb, 10)
	if err != nil {
		return nil, tb.explain(err)
	}
	n, pps := probePlan(cfg, planFor("quick", cfg.RTT, "builtin"))
	lp, _, err := ProbeLoss(ctx, tb, n, pps)
	if err != nil {
		return nil, tb.explain(err)
	}
	fmt.Fprintf(log, "testbed: scenario %s: link RTT %.2f ms, loss %.3f %%\n", sc, float64(med)/1e6, lp)
	runs := make(map[string][]Row)
	for r := 0; r < max(nruns, 1); r++ {
		for _, p := range protos { // interleaved: A B C, A B C, … so that drift hits all alike
			row, err := runners[p].Run(ctx, tb, dur)
			if ctx.Err() != nil {
				return nil, tb.explain(ctx.Err())
			}
			base := newRow(p, sc)
			base.GoodputMbps, base.RetransPct, base.SHA256OK, base.Seconds = row.GoodputMbps, row.RetransPct, row.SHA256OK, row.Seconds
			base.Backend, base.SenderCPU = row.Backend, row.SenderCPU
			base.LinkRTTms, base.LinkLossPct = float64(med)/1e6, lp
			if err != nil {
				base.Error = err.Error()
				fmt.Fprintf(log, "  %-10s run %d error: %v\n", p, r+1, err)
			} else {
				fmt.Fprintf(log, "  %-10s run %d %7.2f Mbit/s, retrans %.2f %%, sha256 ok %v\n", p, r+1, base.GoodputMbps, base.RetransPct, base.SHA256OK)
			}
			runs[p] = append(runs[p], base)
		}
	}
	var rows []Row
	for _, p := range protos {
		rows = append(rows, medianRow(runs[p]))
	}
	return rows, nil
}
