// Command testbed emulates a long, fast, lossy path on one Linux machine and
// runs transfers across it.
//
// It builds three network namespaces — host A, a router R and host B — joined
// by veth pairs (A 198.18.1.2 ⇄ 198.18.1.1 R 198.18.2.1 ⇄ 198.18.2.2 B, RFC
// 2544 benchmarking addresses only). The router shapes each direction with
// tbf (-rate, IP bytes), drops a random -loss percent of forwarded packets
// with nftables (numgen random) and delays every packet by -rtt/2 per
// direction in a user-space delay line: a TUN device in R that policy routing
// sends all forwarded traffic through, holding each packet for the delay and
// writing it back in order. This kernel has no netem, so the delay is ours.
//
// Before anything else the testbed measures its own link and prints measured
// against set: ping RTT (±5 %), TCP rate at 0 % loss (±5 %; the IP-level rate
// of a bulk transfer, goodput × MTU/MSS, by a built-in sender/receiver whose
// receive window is clamped between one BDP and BDP + queue; -tcp iperf3
// uses iperf3 instead) and one-way loss (±30 % relative, counted with
// numbered UDP probes, which must also arrive in order).
//
// Usage:
//
//	testbed [-rate 100mbit] [-rtt 100ms] [-loss 1]              measure the link and exit
//	testbed [flags] -- server-cmd args... -- client-cmd args... run the server on B, then the client on A
//	testbed [flags] -- cmd args...                              run one command on A
//	testbed -matrix [-quick] [-json] [-plot FILE]               the comparison matrix
//
// Commands get TESTBED_A and TESTBED_B in their environment (the hosts'
// addresses) and "{A}" / "{B}" in their arguments are replaced by them. The
// testbed needs root and iproute2, nftables and iputils-ping (iperf3
// optional, for -tcp iperf3); it removes everything it created on success,
// error and Ctrl-C, and deletes namespaces left behind by killed runs
// (udttb-<pid>-…).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// options are the parsed command line.
type options struct {
	cfg        Config
	measure    string // full, quick, none
	tcpTool    string // auto, iperf3, builtin
	serverWait time.Duration
	server     []string // on B
	client     []string // on A
	matrix     matrixOptions
	// stdout carries results only (the link check, the matrix, the commands' own output),
	// stderr the banner, progress and logs.
	stdout, stderr io.Writer
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("testbed", flag.ContinueOnError)
	o := &options{stdout: os.Stdout, stderr: os.Stderr}
	rate := fs.String("rate", "100mbit", "bottleneck rate toward each host, IP bytes (tc units: 100mbit, 1gbit; 0 = unshaped)")
	fs.DurationVar(&o.cfg.RTT, "rtt", 100*time.Millisecond, "round-trip propagation delay added by the delay line")
	fs.Float64Var(&o.cfg.Loss, "loss", 0, "random loss of forwarded packets, percent, per direction")
	fs.DurationVar(&o.cfg.Queue, "queue", 0, "router buffer toward each host as time at -rate (0 = max(rtt, 20ms))")
	fs.IntVar(&o.cfg.MTU, "mtu", 0, "MTU of the router–B link, bytes (0 = 1500); A's link stays at 1500, so A finds it by path MTU discovery")
	fs.BoolVar(&o.cfg.BlackHole, "mtu-blackhole", false, "with -mtu: the router drops its ICMP fragmentation-needed messages (a path MTU black hole)")
	fs.StringVar(&o.measure, "measure", "full", "self-measurement before the run: full, quick or none")
	fs.StringVar(&o.tcpTool, "tcp", "auto", "TCP rate tool for the self-measurement: auto (= builtin: window-clamped, SHA-256-checked), builtin, iperf3")
	fs.DurationVar(&o.serverWait, "server-wait", 500*time.Millisecond, "time between starting the server on B and the client on A")
	fs.BoolVar(&o.matrix.run, "matrix", false, "run the comparison matrix (rate × rtt × loss × protocol)")
	fs.BoolVar(&o.matrix.quick, "quick", false, "with -matrix: only 100 Mbit/s · 100 ms · 0 and 1 % loss, and (without -protocols) only udt, tcp-bbr and tcp-cubic")
	fs.BoolVar(&o.matrix.json, "json", false, "with -matrix: print {\"results\": [...]} as JSON after the table")
	fs.StringVar(&o.matrix.plot, "plot", "", "with -matrix: write a plot of goodput per scenario to this file (PNG, SVG or PDF by its extension; default none)")
	fs.DurationVar(&o.matrix.duration, "time", 20*time.Second, "with -matrix: duration of each transfer")
	fs.IntVar(&o.matrix.runs, "runs", 3, "with -matrix: runs per cell, interleaved across the protocols; the row is the median run")
	fs.StringVar(&o.matrix.protocols, "protocols", "", "with -matrix: comma-separated subset of udt,udt-native,tcp-cubic,tcp-bbr,quic (cubic and tcp mean tcp-cubic, bbr tcp-bbr; default all)")
	fs.StringVar(&o.matrix.udtperf, "udtperf", "", "with -matrix: udtperf binary (default: go build ./examples/udtperf)")
	fs.StringVar(&o.matrix.traceDir, "trace-dir", "", "with -matrix: keep the trace of every udt transfer in this directory (PROTO-RTT-LOSS.jsonl; draw one with udtperf plot)")
	fs.StringVar(&o.matrix.pacer, "pacer", "", "with -matrix: udt pacer backend of the sender (udtperf -pacer; default: udtperf's); rows carry it and the sender's CPU s/GB")
	fs.StringVar(&o.matrix.tolerance, "pacing-tolerance", "", "with -matrix: udt pacing tolerance of the sender (udtperf -pacing-tolerance: default, exact or a duration; default: udtperf's); rows carry it after the backend")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: testbed [flags] [-- server-cmd args... -- client-cmd args... | -- cmd args...]\n\n"+
			"With two commands the server command runs on B, then the client command on A; with one\n"+
			"command it runs on A alone (no server). {A} and {B} in the arguments become the hosts' addresses.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if o.cfg.Rate, err = ParseRate(*rate); err != nil {
		return nil, err
	}
	if err := o.cfg.Validate(); err != nil {
		return nil, err
	}
	switch o.measure {
	case "full", "quick", "none":
	default:
		return nil, fmt.Errorf("-measure must be full, quick or none, not %q", o.measure)
	}
	rest := fs.Args()
	if len(rest) > 0 {
		if rest[0] == "--" { // flag stops at a non-flag; "--" itself is eaten
			rest = rest[1:]
		} else if !slices.Contains(args, "--") {
			return nil, fmt.Errorf("unexpected argument %q (commands go after --)", rest[0])
		}
	}
	if i := slices.Index(rest, "--"); i >= 0 {
		o.server, o.client = rest[:i], rest[i+1:]
		if len(o.server) == 0 || len(o.client) == 0 {
			return nil, errors.New("want -- server-cmd ... -- client-cmd ... with both commands non-empty")
		}
	} else {
		o.client = rest
	}
	if o.matrix.run && len(o.client) > 0 {
		return nil, errors.New("-matrix takes no commands")
	}
	return o, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == delayLineCmd {
		os.Exit(delayLineMain(os.Args[2:]))
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		os.Exit(2)
	}
	code, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
